package cli

import "github.com/spf13/cobra"

// TEMPORARY placeholder while the command is being written.
func newContextCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "context", Hidden: true}
}
