// Command startup-baseline is the floor narad's start-up is measured against (see
// bench/run.go): a minimal program linking the same command-line libraries as narad
// (cobra, viper, lipgloss) that answers `version` and `sub --help` the simplest way.
// Whatever narad takes beyond it is narad's own.
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

func main() {
	v := viper.New()
	v.SetEnvPrefix("NARAD")
	v.AutomaticEnv()
	name := lipgloss.NewStyle().Bold(true)

	root := &cobra.Command{Use: "startup-baseline", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().StringP("server", "s", "", "node to talk to")
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "%s v0.0.0 (%s, server %q)\n", name.Render("startup-baseline"), runtime.Version(), v.GetString("server"))
		},
	}
	sub := &cobra.Command{
		Use:   "sub TOPIC [-- COMMAND [ARG...]]",
		Short: "Consume messages and print them, or run a command per message",
		Run:   func(*cobra.Command, []string) {},
	}
	sub.Flags().IntP("count", "n", 0, "stop after N messages")
	sub.Flags().StringP("output", "o", "text", "output format")
	sub.Flags().IntP("concurrency", "j", 1, "commands at once")
	root.AddCommand(version, sub)
	_ = v.BindPFlags(root.PersistentFlags())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
