package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X github.com/narad/narad/internal/cli.version=v1.2.3 ...".
var (
	version = ""
	commit  = ""
	date    = ""
)

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
}

// buildInfo falls back to what the Go toolchain stamped into the binary when the
// release ldflags were not used (go install, go run).
func buildInfo() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.time":
				if v.Date == "" {
					v.Date = s.Value
				}
			}
		}
	}
	if v.Version == "" {
		v.Version = "v0.0.0-devel"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	if v.Date == "" {
		v.Date = "unknown"
	}
	return v
}

func versionString() string { return buildInfo().Version }

// versionLine is what both `narad version` and `narad --version` print.
func versionLine(v versionInfo) string {
	return fmt.Sprintf("narad %s (commit %s, built %s, %s)", v.Version, v.Commit, v.Date, v.GoVersion)
}

// VersionOptions is what `narad version` runs with.
type VersionOptions struct {
	runEnv
	Output string
}

func newVersionCmd(f *Factory) *cobra.Command { return versionCmd(f, versionRun) }

// versionCmd is the command; run is what it runs (a test passes its own).
func versionCmd(f *Factory, run func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print version, commit, build date and Go version",
		Example: "  narad version\n" +
			"  narad --version\n" +
			"  narad version -o json | jq -r .version",
		Args:        exactArgs(0, "no arguments"),
		Annotations: map[string]string{instant: "yes"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func versionRun(opts *VersionOptions) error {
	v := buildInfo()
	if opts.Output == "json" {
		return opts.printJSON(v)
	}
	_, err := fmt.Fprintln(opts.IO.Out, versionLine(v))
	return outputDone(err)
}
