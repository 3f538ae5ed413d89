package cli

import (
	"github.com/spf13/cobra"
)

func newCompletionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: "Print a shell completion script. For example:\n" +
			"  source <(narad completion bash)\n" +
			"  narad completion zsh > \"${fpath[1]}/_narad\"",
		Args:      exactArgs(1, "one shell: bash, zsh, fish or powershell"),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			out := f.IO.Out
			switch args[0] {
			case "bash":
				return outputDone(root.GenBashCompletionV2(out, true))
			case "zsh":
				return outputDone(root.GenZshCompletion(out))
			case "fish":
				return outputDone(root.GenFishCompletion(out, true))
			case "powershell":
				return outputDone(root.GenPowerShellCompletionWithDesc(out))
			}
			return usageErrorf("unknown shell %q (bash, zsh, fish or powershell)", args[0])
		},
	}
}
