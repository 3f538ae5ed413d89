package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

func newTopicCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "List, inspect, create, edit and delete topics; fan-out children",
		Example: "  narad topic ls\n" +
			"  narad topic create orders --partitions 12 --visibility 1m \\\n" +
			"    --retention 3d\n" +
			"  narad topic info orders\n" +
			"  narad topic edit orders --partitions 24\n" +
			"  narad topic attach orders orders-audit\n" +
			"  narad topic delete orders-old --yes",
		Args: exactArgs(0, "a subcommand: "+topicSubcommands),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("topic needs a subcommand: %s (see narad topic --help)", topicSubcommands)
		},
	}
	cmd.AddCommand(
		topicLsCmd(f, topicLsRun),
		topicInfoCmd(f, topicInfoRun),
		topicCreateCmd(f, topicCreateRun),
		topicEditCmd(f, topicEditRun),
		topicDeleteCmd(f, topicDeleteRun),
		topicAttachCmd(f, topicAttachRun),
		topicDetachCmd(f, topicDetachRun),
		topicChildrenCmd(f, topicChildrenRun),
		topicSchemaCmd(f, topicSchemaRun),
	)
	return cmd
}

const topicSubcommands = "ls, info, create, edit, delete, attach, detach, children or schema"

// --- topic ls ---

// TopicLsOptions is what `narad topic ls` runs with.
type TopicLsOptions struct {
	runEnv
	Output string
}

func topicLsCmd(f *Factory, run func(*TopicLsOptions) error) *cobra.Command {
	opts := &TopicLsOptions{}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List topics",
		Long: "List topics: name, partitions, visibility timeout and retention.\n" +
			"With -o json: {\"topics\":[...]} holding the node's topic objects.",
		Example: "  narad topic ls\n\n" +
			"  # Names only, for a script\n" +
			"  narad topic ls -o json | jq -r '.topics[].name'",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicLsRun(opts *TopicLsOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	topics, err := c.ListTopics(ctx)
	if err != nil {
		return opts.apiFatal(c, err, "")
	}
	doc := struct {
		Topics []client.Topic `json:"topics"`
	}{nonNil(topics)}
	return printList(opts.runEnv, opts.Output, doc, topics, "no topics (create one with narad topic create NAME)",
		[]string{"NAME", "PARTITIONS", "VISIBILITY", "RETENTION"}, func(t client.Topic) []string {
			return []string{t.Name, strconv.Itoa(t.Partitions), formatMillis(t.VisibilityTimeoutMs), formatMillis(t.RetentionMs)}
		})
}

// --- topic info ---

// TopicInfoOptions is what `narad topic info` runs with.
type TopicInfoOptions struct {
	runEnv
	Topic  string
	Output string
}

func topicInfoCmd(f *Factory, run func(*TopicInfoOptions) error) *cobra.Command {
	opts := &TopicInfoOptions{}
	cmd := &cobra.Command{
		Use:   "info TOPIC",
		Short: "Show a topic's settings and its partitions",
		Long: "Show a topic's settings and a table of its partitions: the oldest retained offset,\n" +
			"the next offset to be handed out, the high watermark and the bytes retained.\n" +
			"With -o json: the node's topic object, partition_stats included.",
		Example: "  narad topic info orders\n\n" +
			"  # The tail of each partition, for a script\n" +
			"  narad topic info orders -o json |\n" +
			"    jq -c '.partition_stats[] | {index, high_watermark}'",
		Args: exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicName(opts.Topic))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicInfoRun(opts *TopicInfoOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	t, err := c.Topic(ctx, opts.Topic)
	if err != nil {
		return opts.apiFatal(c, err, opts.Topic)
	}
	if opts.Output == "json" {
		return opts.printJSON(t)
	}
	if err := writeTopicSettings(opts.IO.Out, t); err != nil {
		return outputDone(err)
	}
	// Owner and status are v3.1's; an older node's table goes without the columns.
	placed := false
	for _, p := range t.PartitionStats {
		placed = placed || p.Owner != "" || p.Status != ""
	}
	headers := []string{"PARTITION", "OLDEST", "NEXT", "HIGH WATERMARK", "SIZE"}
	if placed {
		headers = append(headers, "OWNER", "STATUS")
	}
	rows := make([][]string, 0, len(t.PartitionStats))
	for _, p := range t.PartitionStats {
		row := []string{strconv.Itoa(p.Index), strconv.FormatInt(p.OldestOffset, 10),
			strconv.FormatInt(p.NextOffset, 10), strconv.FormatInt(p.HighWatermark, 10), formatBytes(p.SizeBytes)}
		if placed {
			row = append(row, orDash(p.Owner), orDash(p.Status))
		}
		rows = append(rows, row)
	}
	if t.Partial {
		fmt.Fprintln(opts.IO.ErrOut, "narad: warning: a partition owner did not answer; its row holds placeholders")
	}
	return opts.printTable(headers, rows)
}

func writeTopicSettings(w io.Writer, t *client.Topic) error {
	var b strings.Builder
	fmt.Fprintf(&b, "name:             %s\n"+
		"partitions:       %d\n"+
		"visibility:       %s\n"+
		"retention:        %s\n"+
		"max in flight:    %d per partition\n"+
		"max acked ahead:  %d per partition\n",
		render.Escape(t.Name), t.Partitions, formatMillis(t.VisibilityTimeoutMs), formatMillis(t.RetentionMs),
		t.MaxInFlightPerPartition, t.MaxAckedAheadPerPartition)
	if t.SchemaVersion > 0 {
		fmt.Fprintf(&b, "schema:           version %d (narad topic schema %s)\n", t.SchemaVersion, render.Escape(t.Name))
	}
	if t.Parent != "" {
		fmt.Fprintf(&b, "parent:           %s\n", render.Escape(t.Parent))
		if t.FanoutDelayMs > 0 {
			fmt.Fprintf(&b, "delay:            %s after the parent's commit\n", formatMillis(t.FanoutDelayMs))
		}
	}
	if len(t.Children) > 0 {
		fmt.Fprintf(&b, "children:         %s\n", render.Escape(strings.Join(t.Children, ", ")))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// topicExistsConflict is a create's 409 for a topic that is there already, told by its
// text from the other conflicts a child's create can meet.
func topicExistsConflict(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && strings.Contains(strings.ToLower(e.Message), "exists")
}

// orDash is s, or "-" for a table cell the node left empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// --- topic create ---

// TopicCreateOptions is what `narad topic create` runs with.
type TopicCreateOptions struct {
	runEnv
	Spec   client.TopicSpec
	Output string
}

func topicCreateCmd(f *Factory, run func(*TopicCreateOptions) error) *cobra.Command {
	opts := &TopicCreateOptions{}
	var create topicCreateFlags
	cmd := &cobra.Command{
		Use:   "create TOPIC",
		Short: "Create a topic",
		Long: "Create a topic. Settings not given are the node's defaults.\n" +
			"A topic name is 1 to 255 letters, digits, \".\", \"_\" or \"-\" (^[A-Za-z0-9._-]{1,255}$),\n" +
			"not \".\" or \"..\". A topic has 3 to 108 partitions.\n" +
			"Durations are Go durations with a d for days allowed: 500ms, 30s, 1h30m, 7d.\n" +
			"With -o json: the created topic as the node describes it.",
		Example: "  narad topic create orders --partitions 12 --visibility 1m \\\n" +
			"    --retention 3d\n\n" +
			"  # A scratch topic for one CI run, with the node's defaults\n" +
			"  narad topic create \"ci-$BUILD_ID\"\n\n" +
			"  # Fan-out: a copy of every new order, or each copy 5 minutes late\n" +
			"  narad topic create orders-audit --parent orders\n" +
			"  narad topic create orders-later --parent orders --delay 5m",
		Args: exactArgs(1, "one topic name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Spec.Name = args[0]
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicName(opts.Spec.Name),
				create.check(&opts.Spec, cmd.Flags().Changed))
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Spec.Partitions, "partitions", 0, "number of partitions, 3..108 (node default when not given)")
	fl.StringVar(&create.visibility, "visibility", "", "lease (visibility timeout) of a consumed message, e.g. 30s")
	fl.StringVar(&create.retention, "retention", "", "how long messages are kept, e.g. 7d")
	fl.IntVar(&opts.Spec.MaxInFlightPerPartition, "max-in-flight", 0, "unacked messages a partition hands out at most")
	fl.IntVar(&opts.Spec.MaxAckedAheadPerPartition, "max-acked-ahead", 0, "acks held past a partition's oldest unacked message at most")
	fl.StringVar(&opts.Spec.Parent, "parent", "", "create the topic as a fan-out child of this topic")
	fl.StringVar(&create.delay, "delay", "", "with --parent: each copy arrives this long after its commit, e.g. 30s")
	blankOwnChecked(fl, "visibility", "retention", "delay")
	blankNeeds(fl, "parent", "a topic name", "leave the flag out for a topic of its own")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

// topicCreateFlags are topic create's flags that are typed as text.
type topicCreateFlags struct{ visibility, retention, delay string }

// check checks the flags given (changed) and sets what they say in s.
func (v *topicCreateFlags) check(s *client.TopicSpec, changed func(string) bool) error {
	if changed("partitions") && s.Partitions < 1 {
		return usageErrorf("invalid --partitions %d (a node takes 3..108)", s.Partitions)
	}
	var err error
	if changed("visibility") {
		if s.VisibilityTimeoutMs, err = parseMillisFlag("visibility", v.visibility); err != nil {
			return err
		}
	}
	if changed("retention") {
		if s.RetentionMs, err = parseMillisFlag("retention", v.retention); err != nil {
			return err
		}
	}
	if changed("max-in-flight") && s.MaxInFlightPerPartition < 1 {
		return usageErrorf("invalid --max-in-flight %d (1 or more)", s.MaxInFlightPerPartition)
	}
	if changed("max-acked-ahead") && s.MaxAckedAheadPerPartition < 1 {
		return usageErrorf("invalid --max-acked-ahead %d (1 or more)", s.MaxAckedAheadPerPartition)
	}
	if s.Parent != "" {
		if err := validateTopicName(s.Parent); err != nil {
			return err
		}
		if s.Parent == s.Name {
			return usageErrorf("a topic cannot be its own parent (%s)", render.Escape(s.Name))
		}
	}
	if changed("delay") {
		if s.Parent == "" {
			return usageErrorf("--delay needs --parent (a delay applies to the copies a parent sends)")
		}
		if s.FanoutDelayMs, err = parseDelay(v.delay); err != nil {
			return err
		}
	}
	return nil
}

func topicCreateRun(opts *TopicCreateOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	t, err := c.CreateTopic(ctx, opts.Spec)
	if err != nil {
		name, parent := render.Escape(opts.Spec.Name), render.Escape(opts.Spec.Parent)
		switch client.StatusOf(err) {
		case http.StatusConflict:
			// A child's 409 may be its parent's refusal (a retention too short for the
			// delay), which names no topic that exists.
			if opts.Spec.Parent != "" && !topicExistsConflict(err) {
				return exitWith(ExitFailed, fmt.Errorf("%s (the node refused %s as a child of %s; see narad topic info %s)",
					describeErr(err), name, parent, parent))
			}
			return exitWith(ExitFailed, fmt.Errorf("%s (topic %s exists; see narad topic info %s)", describeErr(err), name, name))
		case http.StatusNotFound:
			// The topic is not there yet: what is missing is its parent.
			if opts.Spec.Parent != "" && !client.IsRouteMissing(err) {
				return exitWith(ExitFailed, fmt.Errorf("%s (no topic %s on %s; create the parent first, or see narad topic ls)",
					describeErr(err), parent, c.BaseURL()))
			}
		case http.StatusBadRequest:
			// The node's own limits (partition range and such): invalid input.
			return exitWith(ExitUsage, fmt.Errorf("%s (see narad topic create --help)", describeErr(err)))
		}
		return opts.apiFatal(c, err, opts.Spec.Name)
	}
	// Say what the node made, not what was asked: a node may change a field or
	// ignore one. Where its answer leaves out what was asked (an empty body, no
	// parent), the topic itself is read back once.
	name := render.Escape(opts.Spec.Name)
	if t.Partitions == 0 || (opts.Spec.Parent != "" && t.Parent == "") {
		back, err := c.Topic(ctx, opts.Spec.Name)
		if err != nil {
			return exitWith(ExitFailed, fmt.Errorf("created topic %s, but the node's answer does not say how and reading it back failed: %s (see narad topic info %s)",
				name, describeErr(err), name))
		}
		back.PartitionStats, back.Partial, back.Schema = nil, false, nil // topic info's, not the create's
		t = back
	}
	if err := topicCreated(opts, t); err != nil {
		return err
	}
	if opts.Spec.Parent != "" && t.Parent == "" {
		// A script that asked for a child must not go on with a topic that gets no copies.
		parent := render.Escape(opts.Spec.Parent)
		return exitWith(ExitFailed, fmt.Errorf("the node made %s a topic of its own, not a child of %s (it ignored the parent; narad topic attach %s %s makes it one)",
			name, parent, parent, name))
	}
	return nil
}

// topicCreated reports the topic t as the node made it.
func topicCreated(opts *TopicCreateOptions, t *client.Topic) error {
	if opts.Output == "json" {
		return opts.printJSON(t)
	}
	var child string
	if t.Parent != "" {
		child = ", child of " + render.Escape(t.Parent)
		if t.FanoutDelayMs > 0 {
			child += " delayed " + formatMillis(t.FanoutDelayMs)
		}
	}
	fmt.Fprintf(opts.IO.ErrOut, "created topic %s (%d partitions, visibility %s, retention %s%s)\n",
		render.Escape(t.Name), t.Partitions, formatMillis(t.VisibilityTimeoutMs), formatMillis(t.RetentionMs), child)
	return nil
}

// --- topic delete ---

// TopicDeleteOptions is what `narad topic delete` runs with.
type TopicDeleteOptions struct {
	runEnv
	Topic  string
	Yes    bool
	Output string
}

func topicDeleteCmd(f *Factory, run func(*TopicDeleteOptions) error) *cobra.Command {
	opts := &TopicDeleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete TOPIC",
		Short: "Delete a topic and all its messages",
		Long: "Delete a topic and all its messages. On a terminal it asks you to type the topic's\n" +
			"name; elsewhere (scripts, pipes) it refuses unless --yes is given.\n" +
			"With -o json: {\"name\":TOPIC,\"deleted\":true} on stdout.",
		Example: "  # On a terminal it asks you to type the name\n" +
			"  narad topic delete orders-old\n\n" +
			"  # At the end of a CI run\n" +
			"  narad topic delete \"ci-$BUILD_ID\" --yes",
		Aliases: []string{"rm"},
		Args:    exactArgs(1, "one topic"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			return runWith(f, opts, run, checkTextJSON(opts.Output), validateTopicName(opts.Topic))
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "delete without asking")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func topicDeleteRun(opts *TopicDeleteOptions) error {
	name := render.Escape(opts.Topic)
	if !opts.Yes {
		prompt := fmt.Sprintf("Delete topic %s and all its messages? Type its name to confirm:", name)
		if err := opts.confirm("delete topic "+name, prompt, opts.Topic); err != nil {
			return err
		}
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	if err := c.DeleteTopic(ctx, opts.Topic); err != nil {
		return opts.apiFatal(c, err, opts.Topic)
	}
	return opts.report(opts.Output, struct {
		Name    string `json:"name"`
		Deleted bool   `json:"deleted"`
	}{opts.Topic, true}, "deleted topic %s", name)
}
