package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// CompletionOptions is what `narad completion` runs with.
type CompletionOptions struct {
	runEnv
	Shell string
	// Root is the command tree the script completes.
	Root *cobra.Command
}

// completionGen writes the script for shell; nil for a shell narad has none for.
func completionGen(shell string) func(root *cobra.Command, w io.Writer) error {
	switch shell {
	case "bash":
		return genBashCompletion
	case "zsh":
		return func(root *cobra.Command, w io.Writer) error { return root.GenZshCompletion(w) }
	case "fish":
		return func(root *cobra.Command, w io.Writer) error { return root.GenFishCompletion(w, true) }
	case "powershell":
		return func(root *cobra.Command, w io.Writer) error { return root.GenPowerShellCompletionWithDesc(w) }
	}
	return nil
}

func newCompletionCmd(f *Factory) *cobra.Command { return completionCmd(f, completionRun) }

func completionCmd(f *Factory, run func(*CompletionOptions) error) *cobra.Command {
	opts := &CompletionOptions{}
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
			opts.Shell, opts.Root = args[0], cmd.Root()
			var unknown error
			if completionGen(opts.Shell) == nil {
				unknown = usageErrorf("unknown shell %q (bash, zsh, fish or powershell)", opts.Shell)
			}
			return runWith(f, opts, run, unknown)
		},
	}
}

func completionRun(opts *CompletionOptions) error {
	return outputDone(completionGen(opts.Shell)(opts.Root, opts.IO.Out))
}
