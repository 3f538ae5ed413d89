package cli

import (
	"bytes"
	"cmp"
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
	"github.com/narad/narad/internal/iostreams"
	"github.com/narad/narad/internal/render"
)

// The topic commands that change a topic's settings or its fan-out children:
// edit, attach, detach, children and schema.

// --- topic edit ---

// TopicEditOptions are the settings to change; nil fields stay as they are.
type TopicEditOptions struct {
	runEnv
	Topic  string
	Patch  client.TopicPatch
	Output string
}

func topicEditCmd(f *Factory, run func(*TopicEditOptions) error) *cobra.Command {
	opts := &TopicEditOptions{}
	var edit topicEditFlags
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
			err := cmp.Or(checkTextJSON(opts.Output), validateTopicName(opts.Topic))
			if err == nil {
				// Last: it may read the schema from stdin.
				opts.Patch, err = edit.patch(cmd.Flags().Changed, f.IO, f.Signals)
			}
			return runWith(f, opts, run, err)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&edit.partitions, "partitions", 0, "grow the topic to this many partitions (at most 108)")
	fl.StringVar(&edit.retention, "retention", "", "how long messages are kept, e.g. 7d (0: the node's default)")
	fl.IntVar(&edit.maxInFlight, "max-in-flight", 0, "unacked messages a partition hands out at most (0: default)")
	fl.IntVar(&edit.maxAckedAhead, "max-acked-ahead", 0, "acks held past a partition's oldest unacked message (0: default)")
	fl.StringVar(&edit.schema, "schema", "", "JSON Schema document: a file, or - for stdin")
	fl.StringVar(&edit.visibility, "visibility", "", "refused: the visibility timeout cannot change after creation")
	blankOwnChecked(fl, "retention", "visibility")
	blankNeeds(fl, "schema", "a file (- for stdin)", "leave the flag out to keep the schema")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

// topicEditFlags are topic edit's flags as typed.
type topicEditFlags struct {
	partitions, maxInFlight, maxAckedAhead int
	retention, schema, visibility          string
}

// patch is the change the flags given (changed) ask for, checked; --schema - reads
// the document from stdin (a signal ends the wait for it).
func (v *topicEditFlags) patch(changed func(string) bool, ios *iostreams.IOStreams, sigs *Signals) (p client.TopicPatch, err error) {
	if changed("visibility") {
		return p, usageErrorf("the visibility timeout of a topic cannot change after it is created " +
			"(leases already handed out were cut to it; create a new topic with --visibility instead)")
	}
	if changed("partitions") {
		if v.partitions < 1 {
			return p, usageErrorf("invalid --partitions %d (the new, larger number of partitions)", v.partitions)
		}
		p.Partitions = &v.partitions
	}
	if changed("retention") {
		ms, err := parseMillisOrZero("retention", v.retention)
		if err != nil {
			return p, err
		}
		p.RetentionMs = &ms
	}
	if changed("max-in-flight") {
		if v.maxInFlight < 0 {
			return p, usageErrorf("invalid --max-in-flight %d (0 for the node's default, or more)", v.maxInFlight)
		}
		p.MaxInFlightPerPartition = &v.maxInFlight
	}
	if changed("max-acked-ahead") {
		if v.maxAckedAhead < 0 {
			return p, usageErrorf("invalid --max-acked-ahead %d (0 for the node's default, or more)", v.maxAckedAhead)
		}
		p.MaxAckedAheadPerPartition = &v.maxAckedAhead
	}
	if changed("schema") {
		if v.schema == "-" && ios.IsStdinTTY() {
			fmt.Fprintln(ios.ErrOut, readingTerminal("the schema"))
		}
		if p.Schema, err = readSchema(ios.In, v.schema, sigs); err != nil {
			return p, err
		}
	}
	if p.Empty() {
		return p, usageErrorf("nothing to change (give --partitions, --retention, --max-in-flight, --max-acked-ahead or --schema)")
	}
	return p, nil
}

// maxSchemaBytes bounds a schema document read from a file or stdin: a schema is a
// few KiB, and the node's own limit is far below this.
const maxSchemaBytes = 1 << 20

// readSchema reads a JSON Schema document from a file or stdin and checks it is one
// JSON value, so a typo is exit 2 here rather than a 400 from the node. A stdin or a
// FIFO that gives nothing yet is waited for until a signal, not past it.
func readSchema(stdin io.Reader, src string, sigs *Signals) (json.RawMessage, error) {
	b, err := unlessStopped(sigs, func() ([]byte, error) {
		if src == "-" {
			return io.ReadAll(io.LimitReader(stdin, maxSchemaBytes+1))
		}
		fh, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		return io.ReadAll(io.LimitReader(fh, maxSchemaBytes+1))
	})
	var stopped *exitError
	switch {
	case errors.As(err, &stopped): // a signal: its exit code says it
		return nil, err
	case err != nil:
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

func topicEditRun(opts *TopicEditOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	t, err := c.EditTopic(ctx, opts.Topic, opts.Patch)
	if err != nil {
		return opts.adminFatal(c, err, opts.Topic, "see narad topic edit --help")
	}
	if len(opts.Patch.Schema) > 0 && t.SchemaVersion == 0 {
		// The version the node registered, where its answer does not carry it: from
		// the topic itself (a failure to read it leaves the version unsaid, as the
		// edit itself is done).
		if back, err := c.Topic(ctx, opts.Topic); err == nil {
			t.SchemaVersion = back.SchemaVersion
		}
	}
	if opts.Output == "json" {
		return opts.printJSON(t)
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
	switch {
	case len(p.Schema) > 0 && t.SchemaVersion > 0:
		changed = append(changed, fmt.Sprintf("schema version %d", t.SchemaVersion))
	case len(p.Schema) > 0:
		changed = append(changed, fmt.Sprintf("schema (the node gave no version; see narad topic schema %s)", render.Escape(opts.Topic)))
	}
	fmt.Fprintf(opts.IO.ErrOut, "edited topic %s: %s\n", render.Escape(t.Name), strings.Join(changed, ", "))
	return nil
}

// --- topic attach ---

// TopicAttachOptions attach Child to Parent.
type TopicAttachOptions struct {
	runEnv
	Parent, Child string
	DelayMs       int64
	Output        string
}

func topicAttachCmd(f *Factory, run func(*TopicAttachOptions) error) *cobra.Command {
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
			return runWith(f, opts, run)
		},
	}
	cmd.Flags().StringVar(&delay, "delay", "", "deliver each copy this long after the parent committed it, e.g. 30s (at most 365d)")
	blankOwnChecked(cmd.Flags(), "delay")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicAttachRun(opts *TopicAttachOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	t, err := c.AttachChild(ctx, opts.Parent, opts.Child, opts.DelayMs)
	if client.StatusOf(err) == http.StatusNotFound && !client.IsRouteMissing(err) {
		return exitWith(ExitFailed, fmt.Errorf("%s (both %s and %s must exist; see narad topic ls)",
			describeErr(err), render.Escape(opts.Parent), render.Escape(opts.Child)))
	}
	if err != nil {
		hint := fmt.Sprintf("both topics must exist; see narad topic children %s", render.Escape(opts.Parent))
		return opts.adminFatal(c, err, opts.Parent, hint)
	}
	if opts.Output == "json" {
		return opts.printJSON(t)
	}
	// The answer is the parent, which does not carry the child's delay: the delay
	// said is the one the node set, read back from the child.
	how := "every new message"
	if back, err := c.Topic(ctx, opts.Child); err != nil {
		how += fmt.Sprintf(" (its delay: see narad topic children %s)", render.Escape(opts.Parent))
	} else if back.FanoutDelayMs > 0 {
		how += ", each " + formatMillis(back.FanoutDelayMs) + " after its commit"
	}
	fmt.Fprintf(opts.IO.ErrOut, "attached %s to %s: it now gets a copy of %s\n",
		render.Escape(opts.Child), render.Escape(opts.Parent), how)
	return nil
}

// --- topic detach ---

// TopicDetachOptions detach Child from Parent.
type TopicDetachOptions struct {
	runEnv
	Parent, Child string
	Yes           bool
	Output        string
}

func topicDetachCmd(f *Factory, run func(*TopicDetachOptions) error) *cobra.Command {
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
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicNames(opts.Parent, opts.Child))
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "detach without asking")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicDetachRun(opts *TopicDetachOptions) error {
	parent, child := render.Escape(opts.Parent), render.Escape(opts.Child)
	if !opts.Yes {
		what := fmt.Sprintf("detach %s from %s", child, parent)
		if err := opts.confirm(what, fmt.Sprintf("Stop copying the new messages of %s into %s?", parent, child), "y"); err != nil {
			return err
		}
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	if err := c.DetachChild(ctx, opts.Parent, opts.Child); err != nil {
		if client.StatusOf(err) == http.StatusNotFound && !client.IsRouteMissing(err) {
			// Either topic may be the missing one, or the child not the parent's: the
			// node's text says which; the generic hint would name the parent as missing.
			return exitWith(ExitFailed, fmt.Errorf("%s (see narad topic children %s)", describeErr(err), parent))
		}
		return opts.adminFatal(c, err, opts.Parent, fmt.Sprintf("see narad topic children %s", parent))
	}
	return opts.report(opts.Output, struct {
		Parent   string `json:"parent"`
		Child    string `json:"child"`
		Detached bool   `json:"detached"`
	}{opts.Parent, opts.Child, true}, "detached %s from %s (both topics and their messages stay)", child, parent)
}

// --- topic children ---

// TopicChildrenOptions list Parent's children.
type TopicChildrenOptions struct {
	runEnv
	Parent string
	Output string
}

func topicChildrenCmd(f *Factory, run func(*TopicChildrenOptions) error) *cobra.Command {
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
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicName(opts.Parent))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicChildrenRun(opts *TopicChildrenOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	children, err := c.Children(ctx, opts.Parent)
	if err != nil {
		return opts.adminFatal(c, err, opts.Parent, "")
	}
	doc := struct {
		Parent   string         `json:"parent"`
		Children []client.Child `json:"children"`
	}{opts.Parent, nonNil(children)}
	parent := render.Escape(opts.Parent)
	none := fmt.Sprintf("%s has no children (attach one with narad topic attach %s CHILD)", parent, parent)
	return printList(opts.runEnv, opts.Output, doc, children, none, []string{"NAME", "DELAY", "LAG"}, func(ch client.Child) []string {
		delay := "-"
		if ch.DelayMs > 0 {
			delay = formatMillis(ch.DelayMs)
		}
		lag := strconv.FormatInt(ch.LagMessages, 10)
		if !ch.LagComplete {
			lag += "+"
		}
		return []string{ch.Name, delay, lag}
	})
}

// --- topic schema ---

// TopicSchemaOptions show Topic's schema.
type TopicSchemaOptions struct {
	runEnv
	Topic   string
	Current bool
	Output  string
}

func topicSchemaCmd(f *Factory, run func(*TopicSchemaOptions) error) *cobra.Command {
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
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicName(opts.Topic))
		},
	}
	cmd.Flags().BoolVar(&opts.Current, "current", false, "print only the current schema document")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicSchemaRun(opts *TopicSchemaOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	h, err := c.Schema(ctx, opts.Topic)
	if err != nil {
		return opts.adminFatal(c, err, opts.Topic, "")
	}
	if opts.Output == "json" && !opts.Current {
		if h.Versions == nil {
			h.Versions = []client.SchemaVersion{}
		}
		return opts.printJSON(h)
	}
	if h.Version == 0 || len(h.Versions) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "topic %s has no schema (add one with narad topic edit %s --schema FILE)\n",
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
		writeIndentedJSON(&out, v.Schema)
		out.WriteByte('\n')
	}
	_, err = opts.IO.Out.Write(out.Bytes())
	return outputDone(err)
}
