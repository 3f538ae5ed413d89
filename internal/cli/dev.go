package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/render"
)

// DevOptions is what `narad dev` runs with: the broker's configuration, checked.
type DevOptions struct {
	runEnv
	Config devbroker.Config
	Quiet  bool
}

// devFlags are dev's flags as typed, before they become a devbroker.Config.
type devFlags struct {
	addr           string
	topics         []string
	visibility     time.Duration
	maxConsumeWait time.Duration
	users          []string
	faults         []string
	legacy         bool
}

func newDevCmd(f *Factory) *cobra.Command { return devCmd(f, devRun) }

func devCmd(f *Factory, run func(*DevOptions) error) *cobra.Command {
	opts := &DevOptions{}
	var fl devFlags
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local single-node Narad broker in the foreground",
		Long: "Run a local, in-memory, single-node Narad broker that serves the v3.1 HTTP API.\n" +
			"Auth is off unless --user is given; a non-loopback --addr needs --user.",
		Example: "  narad dev --topic orders:5\n\n" +
			"  # Auth on: an app that may consume and produce orders, and an admin\n" +
			"  narad dev --user app:s3cret:consume:orders*,produce:orders \\\n" +
			"    --user ops:pw:admin\n\n" +
			"  # Test a consumer against a flaky node\n" +
			"  narad dev --fault ack=503:0.2 --fault latency=5ms\n\n" +
			"  # In a CI job: in the background, on a port of its own, quiet\n" +
			"  narad dev --addr 127.0.0.1:17942 --topic orders:3 --quiet &\n" +
			"  narad -s 127.0.0.1:17942 produce orders 'smoke test'",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			opts.Config, err = fl.config()
			return runWith(f, opts, run, err)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&fl.addr, "addr", "127.0.0.1:7942", "address to listen on")
	fs.StringArrayVar(&fl.topics, "topic", nil, "create a topic at start: NAME[:PARTITIONS], partitions 3..108 (repeatable)")
	fs.DurationVar(&fl.visibility, "visibility", 30*time.Second, "default visibility timeout (lease) of new topics")
	fs.DurationVar(&fl.maxConsumeWait, "max-consume-wait", 10*time.Second, "cap on a consume's wait")
	fs.StringArrayVar(&fl.users, "user", nil, "NAME:PASS:GRANTS, GRANTS a comma list of action:pattern or admin (repeatable; turns auth on; the first user with admin is the root admin)")
	fs.StringArrayVar(&fl.faults, "fault", nil, "inject faults: ack=503:0.2, consume=503:0.1, extend=410:1, latency=5ms, reset=0.01 (repeatable)")
	blankOwnChecked(fs, "topic", "user", "fault")
	blankNeeds(fs, "addr", "HOST:PORT", "leave the flag out for 127.0.0.1:7942; port 0 picks a free one")
	fs.BoolVar(&fl.legacy, "legacy", false, "behave like an older (v3.0) node, to test client fallbacks")
	fs.BoolVarP(&opts.Quiet, "quiet", "q", false, "do not log requests")
	return cmd
}

// config is the broker's configuration the flags ask for; bad flags are usage errors.
func (fl *devFlags) config() (devbroker.Config, error) {
	if fl.visibility <= 0 || fl.maxConsumeWait <= 0 {
		return devbroker.Config{}, usageErrorf("--visibility and --max-consume-wait must be positive")
	}
	cfg := devbroker.Config{
		Addr:              fl.addr,
		DefaultVisibility: fl.visibility,
		MaxConsumeWait:    fl.maxConsumeWait,
		Legacy:            fl.legacy,
	}
	for _, s := range fl.topics {
		spec, err := devbroker.ParseTopicFlag(s)
		if err != nil {
			// The broker's error already names the flag and its value.
			return devbroker.Config{}, usageErrorf("%v (see narad dev --help)", err)
		}
		if slices.ContainsFunc(cfg.Topics, func(t devbroker.TopicSpec) bool { return t.Name == spec.Name }) {
			return devbroker.Config{}, usageErrorf("--topic %s given twice (one --topic a topic)", render.Escape(spec.Name))
		}
		cfg.Topics = append(cfg.Topics, spec)
	}
	for _, s := range fl.users {
		u, err := devbroker.ParseUser(s)
		if err != nil {
			// The broker's error names the flag with the password masked; the value
			// itself is never echoed back.
			return devbroker.Config{}, usageErrorf("%v (see narad dev --help)", err)
		}
		if slices.ContainsFunc(cfg.Users, func(o devbroker.User) bool { return o.Name == u.Name }) {
			return devbroker.Config{}, usageErrorf("--user %s given twice (one --user a user)", render.Escape(u.Name))
		}
		cfg.Users = append(cfg.Users, u)
	}
	for _, s := range fl.faults {
		r, err := devbroker.ParseFault(s)
		if err != nil {
			return devbroker.Config{}, usageErrorf("%v (see narad dev --help)", err)
		}
		cfg.Faults = append(cfg.Faults, r)
	}
	return cfg, nil
}

func devRun(opts *DevOptions) error {
	cfg := opts.Config
	if !opts.Quiet {
		cfg.Log = opts.IO.ErrOut
	}
	// Bad configuration (a non-loopback address without users) is bad input; an
	// address that cannot be had (a port in use) is a failure.
	b, err := devbroker.New(cfg)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if err := b.Listen(); err != nil {
		return exitWith(ExitFailed, fmt.Errorf("%s (pick another --addr)",
			strings.TrimPrefix(err.Error(), "devbroker: ")))
	}
	names := make([]string, 0, len(cfg.Topics))
	for _, t := range cfg.Topics {
		names = append(names, t.Name)
	}
	auth := "off"
	if len(cfg.Users) > 0 {
		auth = fmt.Sprintf("on, %d users", len(cfg.Users))
	}
	topics := "no topics"
	if len(names) > 0 {
		topics = "topics: " + strings.Join(names, ", ")
	}
	opts.notice(fmt.Sprintf("narad dev: listening on %s (Ctrl-C to stop)\n  auth %s; %s", b.URL(), auth, topics))

	ctx, cancel := opts.Context()
	defer cancel()
	if err := b.Serve(ctx); err != nil {
		return exitWith(ExitFailed, fmt.Errorf("dev broker: %v", err))
	}
	// A server in the foreground stopped by SIGINT/SIGTERM has done its job: exit 0.
	opts.Signals.ClearForCleanStop()
	fmt.Fprintln(opts.IO.ErrOut, "narad dev: stopped")
	return nil
}
