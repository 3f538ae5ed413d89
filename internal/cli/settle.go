package cli

import (
	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
)

// TEMPORARY placeholder while the command is being written.
func newSettleCmd(f *Factory, name string, a client.Action) *cobra.Command {
	return &cobra.Command{Use: name, Hidden: true}
}
