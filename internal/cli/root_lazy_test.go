package cli

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/iostreams"
)

// The names newRootFor finds commands by are the commands' own.
func TestTopCommandNamesAreTheCommands(t *testing.T) {
	f := &Factory{Getenv: os.Getenv, Now: time.Now, Signals: NewSignals()}
	f.IO, _, _, _ = iostreams.Test()
	for _, top := range topCommands() {
		cmd := top.build(f)
		if cmd.Name() != top.name || !slices.Equal(cmd.Aliases, top.aliases) {
			t.Errorf("topCommands says %q %q, the command is %q %q", top.name, top.aliases, cmd.Name(), cmd.Aliases)
		}
	}
}

// A run on the tree newRootFor builds (one command, or all of them) is the run on
// the whole tree: the same output, the same errors, the same exit code.
func TestLazyTreeRunsLikeTheWholeTree(t *testing.T) {
	whole := func(f *Factory, _ []string) *cobra.Command { return NewRootCmd(f) }
	for _, args := range [][]string{
		{}, {"--help"}, {"-h"}, {"help"}, {"help", "sub"}, {"help", "nosuch"}, {"nosuch"}, {"subb"},
		{"version"}, {"version", "-o", "json"}, {"version", "extra"}, {"version", "-o", "yaml"},
		{"--verbose", "version"}, {"--color", "bad", "version"}, {"-s", "http://127.0.0.1:1", "version"},
		{"--server", "sub", "version"}, {"-s", "version", "sub", "--help"},
		{"sub", "--help"}, {"sub"}, {"sub", "--nosuch"}, {"sub", "t", "--count", "-1"}, {"sub", "-h", "version"},
		{"produce", "--help"}, {"pub", "--help"}, {"pub"}, {"ack", "--help"}, {"nack"}, {"extend", "t"},
		{"topic"}, {"topic", "--help"}, {"topic", "ls", "--help"}, {"topic", "nosuch"}, {"topic", "info"},
		{"user", "add", "--help"}, {"context", "ls", "--help"}, {"context", "list", "--help"},
		{"cluster", "--help"}, {"status", "--help"}, {"replay", "--help"}, {"dev", "--help"}, {"demo", "--help"},
		{"completion", "--help"}, {"completion", "nosuch"}, {"--", "sub"},
		{"--version"}, {"version", "--version"}, {"bench", "--help"}, {"bench"}, {"sub", "--cout", "1"},
		{"topic", "lss"}, {"user", "nosuch"}, {"gen-docs", "--help"},
	} {
		lazyCode, lazyOut, lazyErr := runTree(t, args, newRootFor)
		wholeCode, wholeOut, wholeErr := runTree(t, args, whole)
		if lazyCode != wholeCode || lazyOut != wholeOut || lazyErr != wholeErr {
			t.Errorf("narad %s:\nlazy:  exit %d\n%s%s\nwhole: exit %d\n%s%s", strings.Join(args, " "),
				lazyCode, lazyOut, lazyErr, wholeCode, wholeOut, wholeErr)
		}
	}
}

func runTree(t *testing.T, args []string, build func(*Factory, []string) *cobra.Command) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/config.yaml"}
	f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals()}
	code := run(f, args, build)
	return code, out.String(), errOut.String()
}

// A run of one command builds that command alone; what needs the whole tree gets it.
func TestLazyTreeBuildsOnlyTheCommandRun(t *testing.T) {
	f := &Factory{Getenv: os.Getenv, Now: time.Now, Signals: NewSignals()}
	f.IO, _, _, _ = iostreams.Test()
	all := len(NewRootCmd(f).Commands()) - 1 // less help
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"version"}, 1}, {[]string{"-s", "http://h:1", "pub", "t"}, 1}, {[]string{"topic", "ls"}, 1},
		{nil, all}, {[]string{"help", "sub"}, all}, {[]string{"completion", "bash"}, all}, {[]string{"subb"}, all},
	} {
		root := newRootFor(f, c.args)
		n := 0
		for _, cmd := range root.Commands() {
			if cmd.Name() != "help" {
				n++
			}
		}
		if n != c.want {
			t.Errorf("narad %s: %d commands built, want %d", strings.Join(c.args, " "), n, c.want)
		}
	}
}
