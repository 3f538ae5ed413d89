package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/textenc"
)

// The topic commands that change a topic's settings or its fan-out children:
// edit, attach, detach, children and schema.

// maxFanoutDelayMs is the longest delay a node accepts for a delay child (a year).
const maxFanoutDelayMs = 365 * 24 * 60 * 60 * 1000

// --- topic edit ---

// TopicEditOptions are the settings to change; nil fields stay as they are.
type TopicEditOptions struct {
	Topic  string
	Patch  client.TopicPatch
	Output string
}

func topicEditCmd(f *Factory, run func(*Factory, *TopicEditOptions) error) *cobra.Command {
	opts := &TopicEditOptions{}
	var (
		partitions, maxInFlight, maxAckedAhead int
		retention, schema, visibility          string
	)
	cmd := &cobra.Command{
		Use:   "edit TOPIC",
		Short: "Change a topic's settings (partitions, retention, limits, schema)",
		Long: "Change a topic's settings. Only the flags given are sent; the node applies them one\n" +
			"after another, so a refusal part way leaves the earlier ones applied.\n\n" +
			"  --partitions N       grow to N partitions (never shrink; at most 108)\n" +
			"  --retention D        how long messages are kept (0: node default)\n" +
			"  --max-in-flight N    unacked messages a partition hands out at most\n" +
			"  --max-acked-ahead N  acks held past the oldest unacked message\n" +
			"  --schema FILE|-      a JSON Schema document, a new version\n" +
			"A limit of 0 is the node's default.\n\n" +
			"The visibility timeout cannot change once a topic exists: leases already handed out\n" +
			"were cut to it. Create a new topic (and attach it as a child) to change it.\n" +
			"With -o json: the topic as the node describes it after the change.",
		Example: "  narad topic edit orders --partitions 12 --retention 3d\n" +
			"  narad topic edit orders --schema orders-v2.json\n" +
			"  jq '.properties.note = {\"type\":\"string\"}' v1.json |\n" +
			"    narad topic edit orders --schema -",
		Args: exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			if err := validateTopicName(opts.Topic); err != nil {
				return err
			}
			fl := cmd.Flags()
			if fl.Changed("visibility") {
				return usageErrorf("the visibility timeout of a topic cannot change after it is created " +
					"(leases already handed out were cut to it; create a new topic with --visibility instead)")
			}
			p := &opts.Patch
			if fl.Changed("partitions") {
				if partitions < 1 {
					return usageErrorf("invalid --partitions %d (the new, larger number of partitions)", partitions)
				}
				p.Partitions = &partitions
			}
			if fl.Changed("retention") {
				ms, err := parseMillisOrZero("retention", retention)
				if err != nil {
					return err
				}
				p.RetentionMs = &ms
			}
			if fl.Changed("max-in-flight") {
				if maxInFlight < 0 {
					return usageErrorf("invalid --max-in-flight %d (0 for the node's default, or more)", maxInFlight)
				}
				p.MaxInFlightPerPartition = &maxInFlight
			}
			if fl.Changed("max-acked-ahead") {
				if maxAckedAhead < 0 {
					return usageErrorf("invalid --max-acked-ahead %d (0 for the node's default, or more)", maxAckedAhead)
				}
				p.MaxAckedAheadPerPartition = &maxAckedAhead
			}
			if fl.Changed("schema") {
				doc, err := readSchema(f, schema)
				if err != nil {
					return err
				}
				p.Schema = doc
			}
			if p.Empty() {
				return usageErrorf("nothing to change (give --partitions, --retention, --max-in-flight, --max-acked-ahead or --schema)")
			}
			return run(f, opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&partitions, "partitions", 0, "grow the topic to this many partitions (at most 108)")
	fl.StringVar(&retention, "retention", "", "how long messages are kept, e.g. 7d (0: the node's default)")
	fl.IntVar(&maxInFlight, "max-in-flight", 0, "unacked messages a partition hands out at most (0: default)")
	fl.IntVar(&maxAckedAhead, "max-acked-ahead", 0, "acks held past a partition's oldest unacked message (0: default)")
	fl.StringVar(&schema, "schema", "", "JSON Schema document: a file, or - for stdin")
	fl.StringVar(&visibility, "visibility", "", "refused: the visibility timeout cannot change after creation")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

// parseMillisOrZero is parseMillisFlag with "0" allowed, meaning the node's default.
func parseMillisOrZero(name, s string) (int64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	return parseMillisFlag(name, s)
}

// maxSchemaBytes bounds a schema document read from a file or stdin: a schema is a
// few KiB, and the node's own limit is far below this.
const maxSchemaBytes = 1 << 20

// readSchema reads a JSON Schema document from a file or stdin and checks it is one
// JSON value, so a typo is exit 2 here rather than a 400 from the node.
func readSchema(f *Factory, src string) (json.RawMessage, error) {
	var (
		b   []byte
		err error
	)
	switch src {
	case "":
		return nil, usageErrorf("--schema needs a file name, or - for stdin")
	case "-":
		b, err = io.ReadAll(io.LimitReader(f.IO.In, maxSchemaBytes+1))
	default:
		var fh *os.File
		if fh, err = os.Open(src); err == nil {
			b, err = io.ReadAll(io.LimitReader(fh, maxSchemaBytes+1))
			fh.Close()
		}
	}
	if err != nil {
		return nil, usageErrorf("cannot read --schema: %v", err)
	}
	if len(b) > maxSchemaBytes {
		return nil, usageErrorf("--schema %s is larger than 1 MiB", render.Escape(src))
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, usageErrorf("--schema %s is not a JSON document (a JSON Schema object is expected)", render.Escape(src))
	}
	return json.RawMessage(b), nil
}

func topicEditRun(f *Factory, opts *TopicEditOptions) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	ctx, cancel := f.Context()
	defer cancel()
	t, err := c.EditTopic(ctx, opts.Topic, opts.Patch)
	if err != nil {
		return adminFatal(f, c, err, opts.Topic, "see narad topic edit --help")
	}
	if opts.Output == "json" {
		return f.runEnv().printJSON(t)
	}
	var changed []string
	p := opts.Patch
	if p.Partitions != nil {
		changed = append(changed, fmt.Sprintf("partitions %d", t.Partitions))
	}
	if p.RetentionMs != nil {
		changed = append(changed, "retention "+formatMillis(t.RetentionMs))
	}
	if p.MaxInFlightPerPartition != nil {
		changed = append(changed, fmt.Sprintf("max in flight %d", t.MaxInFlightPerPartition))
	}
	if p.MaxAckedAheadPerPartition != nil {
		changed = append(changed, fmt.Sprintf("max acked ahead %d", t.MaxAckedAheadPerPartition))
	}
	if len(p.Schema) > 0 {
		changed = append(changed, fmt.Sprintf("schema version %d", t.SchemaVersion))
	}
	fmt.Fprintf(f.IO.ErrOut, "edited topic %s: %s\n", render.Escape(t.Name), strings.Join(changed, ", "))
	return nil
}

// --- topic attach ---

// TopicAttachOptions attach Child to Parent.
type TopicAttachOptions struct {
	Parent, Child string
	DelayMs       int64
	Output        string
}

func topicAttachCmd(f *Factory, run func(*Factory, *TopicAttachOptions) error) *cobra.Command {
	opts := &TopicAttachOptions{}
	var delay string
	cmd := &cobra.Command{
		Use:   "attach PARENT CHILD",
		Short: "Copy every new message of PARENT into CHILD (fan-out), maybe later",
		Long: "Make CHILD a fan-out child of PARENT: from now on every message committed to PARENT\n" +
			"is copied into CHILD (same key and payload; no backfill of older messages). With\n" +
			"--delay D the copy arrives only D after the parent committed it: a delay child, into\n" +
			"which nothing can be produced directly. Both topics must exist. The delay cannot\n" +
			"change while attached: detach and attach again.\n" +
			"With -o json: the parent topic as the node describes it after the attach.",
		Example: "  # Retry tiers: failures go to orders-retry-30s, which feeds a delayed\n" +
			"  # topic\n" +
			"  narad topic create orders-retry-30s\n" +
			"  narad topic create orders-retry-30s-run\n" +
			"  narad topic attach orders-retry-30s orders-retry-30s-run --delay 30s\n" +
			"  narad sub orders --max-attempts 3 --dead-letter orders-retry-30s \\\n" +
			"    -- ./handle.sh",
		Args: exactArgs(2, "a parent and a child topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Parent, opts.Child = args[0], args[1]
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			if err := validateTopicNames(opts.Parent, opts.Child); err != nil {
				return err
			}
			if opts.Parent == opts.Child {
				return usageErrorf("a topic cannot be its own child (%s)", render.Escape(opts.Parent))
			}
			if cmd.Flags().Changed("delay") {
				ms, err := parseDelay(delay)
				if err != nil {
					return err
				}
				opts.DelayMs = ms
			}
			return run(f, opts)
		},
	}
	cmd.Flags().StringVar(&delay, "delay", "", "deliver each copy this long after the parent committed it, e.g. 30s (at most 365d)")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

// parseDelay is a fan-out delay: 0 allowed (no delay), at most a year.
func parseDelay(s string) (int64, error) {
	ms, err := parseMillisOrZero("delay", s)
	if err != nil {
		return 0, err
	}
	if ms > maxFanoutDelayMs {
		return 0, usageErrorf("invalid --delay %q (at most 365d)", s)
	}
	return ms, nil
}

func validateTopicNames(names ...string) error {
	for _, n := range names {
		if err := validateTopicName(n); err != nil {
			return err
		}
	}
	return nil
}

func topicAttachRun(f *Factory, opts *TopicAttachOptions) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	ctx, cancel := f.Context()
	defer cancel()
	t, err := c.AttachChild(ctx, opts.Parent, opts.Child, opts.DelayMs)
	if client.StatusOf(err) == http.StatusNotFound && !client.IsRouteMissing(err) {
		return exitWith(ExitFailed, fmt.Errorf("%s (both %s and %s must exist; see narad topic ls)",
			describeErr(err), render.Escape(opts.Parent), render.Escape(opts.Child)))
	}
	if err != nil {
		hint := fmt.Sprintf("both topics must exist; see narad topic children %s", render.Escape(opts.Parent))
		return adminFatal(f, c, err, opts.Parent, hint)
	}
	if opts.Output == "json" {
		return f.runEnv().printJSON(t)
	}
	how := "every new message"
	if opts.DelayMs > 0 {
		how += ", each " + formatMillis(opts.DelayMs) + " after its commit"
	}
	fmt.Fprintf(f.IO.ErrOut, "attached %s to %s: it now gets a copy of %s\n",
		render.Escape(opts.Child), render.Escape(opts.Parent), how)
	return nil
}

// --- topic detach ---

// TopicDetachOptions detach Child from Parent.
type TopicDetachOptions struct {
	Parent, Child string
	Yes           bool
	Output        string
}

func topicDetachCmd(f *Factory, run func(*Factory, *TopicDetachOptions) error) *cobra.Command {
	opts := &TopicDetachOptions{}
	cmd := &cobra.Command{
		Use:   "detach PARENT CHILD",
		Short: "Stop copying PARENT's messages into CHILD",
		Long: "Stop copying PARENT's new messages into CHILD. Both topics and their messages stay.\n" +
			"On a terminal it asks first; elsewhere it refuses unless --yes is given.\n" +
			"With -o json: {\"parent\":PARENT,\"child\":CHILD,\"detached\":true} on stdout.",
		Example: "  narad topic detach orders orders-audit --yes",
		Args:    exactArgs(2, "a parent and a child topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Parent, opts.Child = args[0], args[1]
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			if err := validateTopicNames(opts.Parent, opts.Child); err != nil {
				return err
			}
			return run(f, opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "detach without asking")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicDetachRun(f *Factory, opts *TopicDetachOptions) error {
	parent, child := render.Escape(opts.Parent), render.Escape(opts.Child)
	if !opts.Yes {
		what := fmt.Sprintf("detach %s from %s", child, parent)
		if err := f.runEnv().confirm(what, fmt.Sprintf("Stop copying the new messages of %s into %s?", parent, child), "y"); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	ctx, cancel := f.Context()
	defer cancel()
	if err := c.DetachChild(ctx, opts.Parent, opts.Child); err != nil {
		return adminFatal(f, c, err, opts.Parent, fmt.Sprintf("see narad topic children %s", parent))
	}
	if opts.Output == "json" {
		return f.runEnv().printJSON(struct {
			Parent   string `json:"parent"`
			Child    string `json:"child"`
			Detached bool   `json:"detached"`
		}{opts.Parent, opts.Child, true})
	}
	fmt.Fprintf(f.IO.ErrOut, "detached %s from %s (both topics and their messages stay)\n", child, parent)
	return nil
}

// --- topic children ---

// TopicChildrenOptions list Parent's children.
type TopicChildrenOptions struct {
	Parent string
	Output string
}

func topicChildrenCmd(f *Factory, run func(*Factory, *TopicChildrenOptions) error) *cobra.Command {
	opts := &TopicChildrenOptions{}
	cmd := &cobra.Command{
		Use:   "children PARENT",
		Short: "List a topic's fan-out children and how far behind each is",
		Long: "List PARENT's fan-out children: name, delay, and lag (parent messages not yet\n" +
			"copied). A lag marked \"+\" is a lower bound: some partition did not report.\n" +
			"With -o json: {\"parent\":PARENT, \"children\":[{\"name\", \"delay_ms\",\n" +
			"\"lag_messages\", \"lag_complete\"}]}.",
		Example: "  narad topic children orders\n" +
			"  narad topic children orders -o json |\n" +
			"    jq '.children[] | select(.lag_messages > 1000)'",
		Args: exactArgs(1, "one parent topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Parent = args[0]
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			if err := validateTopicName(opts.Parent); err != nil {
				return err
			}
			return run(f, opts)
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicChildrenRun(f *Factory, opts *TopicChildrenOptions) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	ctx, cancel := f.Context()
	defer cancel()
	children, err := c.Children(ctx, opts.Parent)
	if err != nil {
		return adminFatal(f, c, err, opts.Parent, "")
	}
	if opts.Output == "json" {
		if children == nil {
			children = []client.Child{}
		}
		return f.runEnv().printJSON(struct {
			Parent   string         `json:"parent"`
			Children []client.Child `json:"children"`
		}{opts.Parent, children})
	}
	if len(children) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "%s has no children (attach one with narad topic attach %s CHILD)\n",
			render.Escape(opts.Parent), render.Escape(opts.Parent))
		return nil
	}
	rows := make([][]string, 0, len(children))
	for _, ch := range children {
		delay := "-"
		if ch.DelayMs > 0 {
			delay = formatMillis(ch.DelayMs)
		}
		lag := strconv.FormatInt(ch.LagMessages, 10)
		if !ch.LagComplete {
			lag += "+"
		}
		rows = append(rows, []string{ch.Name, delay, lag})
	}
	return f.runEnv().printTable([]string{"NAME", "DELAY", "LAG"}, rows)
}

// --- topic schema ---

// TopicSchemaOptions show Topic's schema.
type TopicSchemaOptions struct {
	Topic   string
	Current bool
	Output  string
}

func topicSchemaCmd(f *Factory, run func(*Factory, *TopicSchemaOptions) error) *cobra.Command {
	opts := &TopicSchemaOptions{}
	cmd := &cobra.Command{
		Use:   "schema TOPIC",
		Short: "Show a topic's JSON Schema and its versions",
		Long: "Show the JSON Schema a topic validates every produce against, and its versions,\n" +
			"oldest first. --current prints only the current document (ready for editing and\n" +
			"narad topic edit --schema -). A topic without a schema says so on stderr.\n" +
			"With -o json: {\"topic\",\"version\",\"versions\":[{\"version\",\"schema\"}]}.",
		Example: "  narad topic schema orders --current > orders.json\n" +
			"  narad topic edit orders --schema orders.json",
		Args: exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			if err := validateTopicName(opts.Topic); err != nil {
				return err
			}
			return run(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Current, "current", false, "print only the current schema document")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicSchemaRun(f *Factory, opts *TopicSchemaOptions) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	ctx, cancel := f.Context()
	defer cancel()
	h, err := c.Schema(ctx, opts.Topic)
	if err != nil {
		return adminFatal(f, c, err, opts.Topic, "")
	}
	if opts.Output == "json" && !opts.Current {
		if h.Versions == nil {
			h.Versions = []client.SchemaVersion{}
		}
		return f.runEnv().printJSON(h)
	}
	if h.Version == 0 || len(h.Versions) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "topic %s has no schema (add one with narad topic edit %s --schema FILE)\n",
			render.Escape(opts.Topic), render.Escape(opts.Topic))
		return nil
	}
	var out bytes.Buffer
	for _, v := range h.Versions {
		if opts.Current && v.Version != h.Version {
			continue
		}
		if !opts.Current {
			mark := ""
			if v.Version == h.Version {
				mark = " (current)"
			}
			fmt.Fprintf(&out, "# version %d%s\n", v.Version, mark)
		}
		// InertJSON first: a schema's strings may hold C1 controls, which JSON
		// leaves raw and a terminal would act on.
		if err := json.Indent(&out, textenc.InertJSON(v.Schema), "", "  "); err != nil {
			out.Write(textenc.InertJSON(v.Schema))
		}
		out.WriteByte('\n')
	}
	if _, err := f.IO.Out.Write(out.Bytes()); err != nil && !consumer.IsClosedOutput(err) {
		return exitWith(ExitFailed, fmt.Errorf("write output: %v", err))
	}
	return nil
}

// adminFatal is apiFatal for the operator's commands: a 400 carries the command's
// own hint, a 409 is a conflict (exit 1) with the node's words, and a route the node
// does not have says which node it was.
func adminFatal(f *Factory, c *client.Client, err error, topic, hint400 string) error {
	switch client.StatusOf(err) {
	case http.StatusBadRequest:
		if hint400 == "" {
			hint400 = "see --help"
		}
		return exitWith(ExitUsage, fmt.Errorf("%s (%s)", describeErr(err), hint400))
	case http.StatusConflict:
		if topic == "" {
			return exitWith(ExitFailed, errors.New(describeErr(err)))
		}
		return exitWith(ExitFailed, fmt.Errorf("%s (the node refused the change as it stands; see narad topic info %s)",
			describeErr(err), render.Escape(topic)))
	case http.StatusNotFound:
		if client.IsRouteMissing(err) {
			return exitWith(ExitFailed, fmt.Errorf("%s (the node at %s does not serve this; it may be an older version)",
				describeErr(err), c.BaseURL()))
		}
	}
	return f.runEnv().apiFatal(c, err, topic)
}
