package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/render"
)

// DemoOptions is what `narad demo` runs with: it takes no flags.
type DemoOptions struct {
	runEnv
}

func newDemoCmd(f *Factory) *cobra.Command { return demoCmd(f, demoRun) }

func demoCmd(f *Factory, run func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{}
	cmd := &cobra.Command{
		Annotations: map[string]string{holdsWork: "yes"},
		Use:         "demo",
		Short:       "Show narad at work against an embedded broker",
		Long: "Start an embedded broker on a free loopback port, produce sample orders (JSON, text\n" +
			"and binary), and run sub, --peek, replay and the lease supervisor against it.",
		Example: "  narad demo\n" +
			"  narad demo --color never > tour.txt",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run)
		},
	}
	return cmd
}

// demoStep is one narad invocation the demo shows and runs.
type demoStep struct {
	say  string
	args []string
}

func demoRun(opts *DemoOptions) error {
	b, err := devbroker.Start(devbroker.Config{
		Addr:   "127.0.0.1:0",
		Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3, VisibilityTimeout: 5 * time.Second}},
	})
	if err != nil {
		return exitWith(ExitFailed, fmt.Errorf("demo broker: %v", err))
	}
	defer b.Close()
	dir, err := os.MkdirTemp("", "narad-demo-")
	if err != nil {
		return exitWith(ExitFailed, err)
	}
	defer os.RemoveAll(dir)
	// The steps read an empty config of their own (--config), never the user's: a
	// context there is meant for the user's node. It is written, as --config must
	// name a file that exists.
	emptyConfig := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(emptyConfig, nil, 0o600); err != nil {
		return exitWith(ExitFailed, err)
	}
	png := filepath.Join(dir, "logo.png")
	if err := os.WriteFile(png, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o600); err != nil {
		return exitWith(ExitFailed, err)
	}

	st := render.NewStyles(opts.IO.Out, opts.IO.ColorEnabled())
	fmt.Fprintf(opts.IO.Out, "%s\n\n", st.Header.Render(fmt.Sprintf("narad demo: an embedded broker on %s, topic orders (3 partitions, 5s leases)", b.URL())))

	steps := []demoStep{
		{"Produce a JSON order, a text message and a binary file, keyed by customer:",
			[]string{"produce", "orders", "-k", "customer-42", `{"order_id": "ord_123", "amount": 4999}`, "hello world"}},
		{"", []string{"produce", "orders", "-k", "customer-7", "--file", png}},
		{"Watch without taking anything (replay reads, no leases):",
			[]string{"sub", "orders", "--peek", "--from-beginning", "--count", "3", "--timeout", "5s"}},
		{"Read history by position:",
			[]string{"replay", "orders", "--count", "3", "-o", "json"}},
		{"Consume for real: each line is printed, then acked:",
			[]string{"sub", "orders", "--count", "3", "--stats"}},
		{"Produce four more orders, one per line:",
			[]string{"produce", "orders", "--lines", "--file", writeDemoLines(dir)}},
	}
	if _, err := exec.LookPath("sh"); err == nil {
		steps = append(steps, demoStep{
			"Run a command per message, two at a time, with the lease extended while it runs:",
			[]string{"sub", "orders", "--count", "4", "-j", "2", "--prefix", "--stats", "--",
				"sh", "-c", `echo "handled $(cat) (key ${NARAD_KEY:-none})"`}})
	} else {
		steps = append(steps, demoStep{"Consume the rest:", []string{"sub", "orders", "--count", "4"}})
	}
	steps = append(steps,
		demoStep{"The topic's settings and partitions:", []string{"topic", "info", "orders"}},
		demoStep{"Nothing is left to consume (--drain stops at the first empty answer):",
			[]string{"sub", "orders", "--drain", "--stats"}},
		demoStep{"Watch the node live for a few seconds (on a terminal the table refreshes in place):",
			[]string{"status", "--watch", "--interval", "1s", "--count", "3"}})

	for _, s := range steps {
		if s.say != "" {
			fmt.Fprintf(opts.IO.Out, "%s\n", st.Dim.Render("# "+s.say))
		}
		fmt.Fprintf(opts.IO.Out, "%s\n", st.Success.Render("$ narad "+showArgs(s.args, dir)))
		// The demo is a show read top to bottom, so each step's stderr (summaries,
		// counters) is interleaved with its stdout in order.
		ios := *opts.IO
		ios.ErrOut = opts.IO.Out
		// What goes to ErrOut now lands on stdout: it follows stdout's terminal facts
		// (`narad demo > file` from a terminal gets no colour codes in the file).
		ios.SetTTY(opts.IO.IsStdinTTY(), opts.IO.IsStdoutTTY(), opts.IO.IsStdoutTTY())
		child := &Factory{IO: &ios, Getenv: demoGetenv(opts.Getenv), Now: opts.Now, Signals: opts.Signals}
		args := append([]string{"--server", b.URL(), "--config", emptyConfig}, s.args...)
		if code := Run(child, args); code != ExitOK {
			return exitWith(code, fmt.Errorf("demo step failed: narad %s", strings.Join(s.args, " ")))
		}
		fmt.Fprintln(opts.IO.Out)
	}
	fmt.Fprintln(opts.IO.Out, st.Dim.Render("# Try it yourself: narad dev --topic orders, then narad --help."))
	fmt.Fprintln(opts.IO.Out, st.Dim.Render("# Hold one message at a time and decide, on a terminal: narad sub orders -i"))
	fmt.Fprintln(opts.IO.Out, st.Dim.Render("# (a ack, n nack, s skip, d dead-letter with --dead-letter TOPIC, ? help, q quit)."))
	return nil
}

// demoGetenv hides the NARAD_* variables from the demo's own runs: a context or
// credentials there are meant for the user's node, not for the embedded broker.
func demoGetenv(getenv func(string) string) func(string) string {
	return func(k string) string {
		if strings.HasPrefix(k, "NARAD_") {
			return ""
		}
		return getenv(k)
	}
}

func writeDemoLines(dir string) string {
	path := filepath.Join(dir, "orders.txt")
	lines := `{"order_id": "ord_124", "amount": 1250}
{"order_id": "ord_125", "amount": 800}
{"order_id": "ord_126", "amount": 15}
{"order_id": "ord_127", "amount": 99000}
`
	_ = os.WriteFile(path, []byte(lines), 0o600)
	return path
}

// showArgs prints a step as a user would type it, with the demo's temp dir hidden
// and arguments quoted for a shell.
func showArgs(args []string, dir string) string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, dir+string(filepath.Separator), "")
		if strings.ContainsAny(a, " \"'$(){}*") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
