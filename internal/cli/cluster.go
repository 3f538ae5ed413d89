package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
	"github.com/narad/narad/internal/textenc"
)

// The cluster commands: members, moves, decommission (admin).

func newClusterCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cluster",
		Short:   "Cluster members and partition moves; decommission a node (admin)",
		Example: "  narad cluster members\n  narad cluster decommission node-3 --dry-run\n  narad cluster moves",
		Args:    exactArgs(0, "a subcommand: members, moves or decommission"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("cluster needs a subcommand: members, moves or decommission (see narad cluster --help)")
		},
	}
	cmd.AddCommand(
		clusterMembersCmd(f, clusterMembersRun),
		clusterMovesCmd(f, clusterMovesRun),
		clusterDecommissionCmd(f, clusterDecommissionRun),
	)
	return cmd
}

// ClusterMembersOptions is what `narad cluster members` runs with.
type ClusterMembersOptions struct {
	runEnv
	Output string
}

func clusterMembersCmd(f *Factory, run func(*ClusterMembersOptions) error) *cobra.Command {
	opts := &ClusterMembersOptions{}
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's nodes",
		Long: "List the cluster's nodes: id, address, status, whether draining, partitions owned\n" +
			"and partitions moving away. A single node lists itself.\n" +
			"With -o json: {\"members\":[{\"id\", \"addr\", \"status\", \"draining\",\n" +
			"\"owned_partitions\", \"outbound_moves\"}]}.",
		Example: "  narad cluster members\n" +
			"  narad cluster members -o json |\n" +
			"    jq -r '.members[] | select(.status != \"alive\") | .id'",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func clusterMembersRun(opts *ClusterMembersOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	members, err := c.Members(ctx)
	if err != nil {
		return opts.adminFatal(c, err, "", "")
	}
	doc := struct {
		Members []client.Member `json:"members"`
	}{nonNil(members)}
	return printList(opts.runEnv, opts.Output, doc, members, "",
		[]string{"ID", "ADDRESS", "STATUS", "DRAINING", "PARTITIONS", "MOVING OUT"}, func(m client.Member) []string {
			draining := "no"
			if m.Draining {
				draining = "yes"
			}
			return []string{m.ID, m.Addr, m.Status, draining, strconv.Itoa(m.OwnedPartitions), strconv.Itoa(m.OutboundMoves)}
		})
}

// ClusterMovesOptions is what `narad cluster moves` runs with.
type ClusterMovesOptions struct {
	runEnv
	Output string
}

func clusterMovesCmd(f *Factory, run func(*ClusterMovesOptions) error) *cobra.Command {
	opts := &ClusterMovesOptions{}
	cmd := &cobra.Command{
		Use:   "moves",
		Short: "List partitions moving between nodes",
		Long: "List the partitions moving between nodes: topic, partition, from, to.\n" +
			"With -o json: {\"moves\":[{\"topic\",\"partition\",\"from\",\"to\"}]}.",
		Example: "  # Wait until a decommission has moved every partition away\n" +
			"  while [ \"$(narad cluster moves -o json | jq '.moves | length')\" -gt 0 ]\n" +
			"  do sleep 5; done",
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWith(f, opts, run, checkTextJSON(opts.Output))
		},
	}
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func clusterMovesRun(opts *ClusterMovesOptions) error {
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	moves, err := c.Moves(ctx)
	if err != nil {
		return opts.adminFatal(c, err, "", "")
	}
	doc := struct {
		Moves []client.Move `json:"moves"`
	}{nonNil(moves)}
	return printList(opts.runEnv, opts.Output, doc, moves, "no partitions are moving",
		[]string{"TOPIC", "PARTITION", "FROM", "TO"}, func(m client.Move) []string {
			return []string{m.Topic, strconv.Itoa(m.Partition), m.From, m.To}
		})
}

// ClusterDecommissionOptions is what `narad cluster decommission` runs with: drain
// (or preview, or cancel draining) one member.
type ClusterDecommissionOptions struct {
	runEnv
	ID     string
	Mode   client.DecommissionMode
	Yes    bool
	Output string
}

func clusterDecommissionCmd(f *Factory, run func(*ClusterDecommissionOptions) error) *cobra.Command {
	opts := &ClusterDecommissionOptions{}
	var dryRun, cancelIt bool
	cmd := &cobra.Command{
		Use:   "decommission ID [--dry-run | --cancel]",
		Short: "Move every partition away from a node, so it can be removed",
		Long: "Decommission a member: the cluster moves its partitions to the other nodes (watch\n" +
			"with narad cluster moves). --dry-run asks the node what would happen and changes\n" +
			"nothing, and exits 1 when the verdict is a refusal (the reasons on stderr);\n" +
			"--cancel stops a decommission in progress. On a terminal it asks first;\n" +
			"elsewhere it refuses unless --yes is given (--dry-run and --cancel never ask).\n" +
			"A node older than v3.1 has no dry run: it ignores --dry-run and starts the\n" +
			"decommission, answering no verdict; narad then says so and exits 1.\n" +
			"With -o json: the node's verdict for --dry-run, else {\"id\":ID,\n" +
			"\"decommission\":\"started\"|\"cancelled\"}.",
		Example: "  narad cluster decommission node-3 --dry-run\n  narad cluster decommission node-3 --yes && narad cluster moves",
		Args:    exactArgs(1, "one member id, as narad cluster members lists it"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if strings.TrimSpace(opts.ID) == "" || strings.ContainsFunc(opts.ID, unicode.IsControl) {
				// An unset variable would post to /v1/cluster/members//decommission, a
				// path some router turns into another.
				return usageErrorf("invalid member id %q (an id as narad cluster members lists it, e.g. node-3)", opts.ID)
			}
			if err := checkTextJSON(opts.Output); err != nil {
				return err
			}
			switch {
			case dryRun && cancelIt:
				return usageErrorf("--dry-run and --cancel exclude each other")
			case dryRun:
				opts.Mode = client.DecommissionDryRun
			case cancelIt:
				opts.Mode = client.DecommissionCancel
			}
			return runWith(f, opts, run)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "ask what would happen; change nothing")
	cmd.Flags().BoolVar(&cancelIt, "cancel", false, "cancel a decommission in progress")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "decommission without asking")
	addTextJSONFlag(cmd, &opts.Output)
	return cmd
}

func clusterDecommissionRun(opts *ClusterDecommissionOptions) error {
	id := render.Escape(opts.ID)
	if opts.Mode == client.DecommissionStart && !opts.Yes {
		if err := opts.confirm("decommission "+id, fmt.Sprintf("Move every partition away from %s?", id), "y"); err != nil {
			return err
		}
	}
	c, ctx, done, err := opts.node()
	if err != nil {
		return err
	}
	defer done()
	verdict, err := c.Decommission(ctx, opts.ID, opts.Mode)
	if err != nil {
		if opts.Mode == client.DecommissionDryRun && busyStatus(err) {
			// Sent once like the change, but asking changes nothing: there is no
			// change to look for before asking again.
			return exitWith(ExitFailed, fmt.Errorf("%s (a dry run changes nothing; try again later)", describeErr(err)))
		}
		if client.StatusOf(err) == http.StatusNotFound && !client.IsRouteMissing(err) {
			// The node's own 404 (JSON) is about the ID typed; a route it lacks is not.
			return exitWith(ExitFailed, fmt.Errorf("%s (no member %s; see narad cluster members for the IDs)", describeErr(err), id))
		}
		return opts.adminFatal(c, err, "", "see narad cluster members")
	}
	switch opts.Mode {
	case client.DecommissionDryRun:
		if len(verdict) == 0 {
			// A v3.1 node answers a dry run with its verdict. An older one ignores
			// dry_run, as any query it does not know, and answers 204 for the
			// decommission it has just started: never say "nothing changed" then.
			return exitWith(ExitFailed, fmt.Errorf("decommission --dry-run: the node answered without a verdict, "+
				"as a node older than v3.1 does when it ignores dry_run and starts the decommission (%s may be "+
				"draining now: see narad cluster members; narad cluster decommission %s --cancel stops it)", id, id))
		}
		v, known := readVerdict(verdict)
		if err := writeVerdict(opts, verdict, v, known); err != nil {
			return err
		}
		if known && !*v.Would {
			// A script that checks first with --dry-run trusts the exit code: a
			// refusal is the failure the real decommission would be, stated once
			// on stderr while the report stays on stdout.
			return exitWith(ExitFailed, fmt.Errorf("decommissioning %s would be refused: %s (dry run: nothing changed; see narad cluster members)",
				id, v.reasonText()))
		}
		return nil
	case client.DecommissionCancel:
		return opts.report(opts.Output, map[string]string{"id": opts.ID, "decommission": "cancelled"},
			"cancelled the decommission of %s", id)
	}
	return opts.report(opts.Output, map[string]string{"id": opts.ID, "decommission": "started"},
		"decommissioning %s: its partitions are moving away (see narad cluster moves)", id)
}

// verdict is a dry run's answer in the shape a v3.1 node gives:
// {"would_decommission":bool,"reasons":[{"code","message"}]}.
type verdict struct {
	Would   *bool `json:"would_decommission"`
	Reasons []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"reasons"`
}

// readVerdict reads a dry run's answer; known is false for any other shape, which
// is then shown as the JSON it is and judged by no one.
func readVerdict(raw json.RawMessage) (v verdict, known bool) {
	if json.Unmarshal(raw, &v) != nil || v.Would == nil {
		return verdict{}, false
	}
	return v, true
}

// reasonText is the reasons as one line, for the fatal line of a refusal.
func (v verdict) reasonText() string {
	if len(v.Reasons) == 0 {
		return "the node gave no reason"
	}
	parts := make([]string, len(v.Reasons))
	for i, r := range v.Reasons {
		parts[i] = render.Escape(r.Message)
		if parts[i] == "" {
			parts[i] = render.Escape(r.Code)
		}
	}
	return strings.Join(parts, "; ")
}

// writeVerdict writes the dry run's report on stdout: the node's JSON with -o json,
// else a few lines for a verdict of the known shape, else the JSON indented.
func writeVerdict(opts *ClusterDecommissionOptions, raw json.RawMessage, v verdict, known bool) error {
	if opts.Output == "json" {
		if json.Valid(raw) {
			return opts.printJSON(raw) // through --jq like every other -o json
		}
		return opts.writeOut(string(textenc.InertJSON(raw)) + "\n")
	}
	if known {
		return opts.writeOut(summarizeVerdict(opts.ID, v))
	}
	fmt.Fprintf(opts.IO.ErrOut, "dry run of decommissioning %s (nothing changed); the node's verdict:\n", render.Escape(opts.ID))
	var out bytes.Buffer
	writeIndentedJSON(&out, raw)
	out.WriteByte('\n')
	return opts.writeOut(out.String())
}

// summarizeVerdict is a verdict of the known shape as a few lines.
func summarizeVerdict(id string, v verdict) string {
	var b strings.Builder
	if *v.Would {
		fmt.Fprintf(&b, "decommissioning %s would go ahead (dry run: nothing changed)\n", render.Escape(id))
	} else {
		fmt.Fprintf(&b, "decommissioning %s would be refused (dry run: nothing changed):\n", render.Escape(id))
	}
	for _, r := range v.Reasons {
		fmt.Fprintf(&b, "  %s: %s\n", render.Escape(r.Code), render.Escape(r.Message))
	}
	return b.String()
}
