package cli

import (
	"github.com/spf13/cobra"
)

func newCompletionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: "Print a shell completion script. It completes commands, flags and their values,\n" +
			"topic names from the node (asked with a short timeout) and context names from the\n" +
			"config. The bash script works with or without the bash-completion package.",
		Example: "  # bash, for this shell, then for good\n" +
			"  source <(narad completion bash)\n" +
			"  narad completion bash \\\n" +
			"    > ~/.local/share/bash-completion/completions/narad\n\n" +
			"  # zsh\n" +
			"  narad completion zsh > \"${fpath[1]}/_narad\"\n\n" +
			"  # fish\n" +
			"  narad completion fish > ~/.config/fish/completions/narad.fish\n\n" +
			"  # PowerShell\n" +
			"  narad completion powershell | Out-String | Invoke-Expression",
		Args:      exactArgs(1, "one shell: bash, zsh, fish or powershell"),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			out := f.IO.Out
			switch args[0] {
			case "bash":
				return outputDone(genBashCompletion(root, out))
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
