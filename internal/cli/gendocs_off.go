//go:build !gendocs

package cli

import "github.com/spf13/cobra"

// newGenDocsCmd is nil in the everyday binary: the man page writer it needs
// (cobra/doc, go-md2man, blackfriday) builds tables at package init that cost
// every start of narad more than all of narad's own start-up. scripts/gen-docs.sh
// builds with -tags gendocs, which has the hidden gen-docs command.
func newGenDocsCmd(*Factory) *cobra.Command { return nil }
