package devbroker

import (
	"fmt"
	"net/http"
	"strconv"
)

// The /v1/cluster routes of a single node: itself as the only member (alive, the Raft
// leader and only voter, owning every partition) and no partition moves. A decommission
// is refused as a real node refuses one that could never complete (409 with every
// reason): removing the only voter leaves fewer than three, and no other node can take
// its partitions. Every route needs admin, reads included.

type blockReason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// decommissionBlockers are why this node can never be decommissioned.
func (b *Broker) decommissionBlockers() []blockReason {
	return []blockReason{
		{"below_min_voters", "removing " + NodeID + " would leave 0 voters, fewer than the 3 a cluster keeps"},
		{"no_receivers", "no other alive node can take the partitions of " + NodeID},
	}
}

func (b *Broker) ownedPartitions() int {
	n := 0
	for _, name := range b.topicNames() {
		if t := b.topic(name); t != nil {
			n += t.partitionCount()
		}
	}
	return n
}

// parseFlag reads an optional boolean query parameter (absent is false); a value that is
// not a boolean answers 400.
func parseFlag(w http.ResponseWriter, r *http.Request, name string) (on, ok bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, true
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s %q must be true or false", name, s))
		return false, false
	}
	return v, true
}

// member finds the member of the path's {id} (answering 404 when there is none) after
// the admin check.
func (b *Broker) member(w http.ResponseWriter, r *http.Request) bool {
	if _, ok := b.admin(w, r); !ok {
		return false
	}
	if id := r.PathValue("id"); id != NodeID {
		writeError(w, http.StatusNotFound, fmt.Sprintf("member %q not found", id))
		return false
	}
	return true
}

func (b *Broker) handleMembers(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.admin(w, r); !ok {
		return
	}
	detail, ok := parseFlag(w, r, "detail")
	if !ok {
		return
	}
	type nodeStatus struct {
		Node            string `json:"node"`
		Draining        bool   `json:"draining"`
		ProduceInFlight int    `json:"produce_in_flight"`
		DispatchBacklog int    `json:"dispatch_backlog"`
	}
	type memberJSON struct {
		ID                  string      `json:"id"`
		Addr                string      `json:"addr"`
		Status              string      `json:"status"`
		Draining            bool        `json:"draining"`
		OwnedPartitions     int         `json:"owned_partitions"`
		OutboundMoves       int         `json:"outbound_moves"`
		Voter               bool        `json:"voter"`
		Leader              bool        `json:"leader"`
		HeartbeatAgeSeconds int         `json:"heartbeat_age_seconds"`
		NodeStatus          *nodeStatus `json:"node_status,omitempty"`
	}
	addr := b.Addr()
	if addr == "" {
		addr = b.cfg.Addr // serving through Handler, not listening itself
	}
	m := memberJSON{
		ID: NodeID, Addr: addr, Status: "alive", OwnedPartitions: b.ownedPartitions(),
		Voter: true, Leader: true,
	}
	if detail {
		m.NodeStatus = &nodeStatus{Node: NodeID}
	}
	writeJSON(w, http.StatusOK, struct {
		Members []memberJSON `json:"members"`
	}{[]memberJSON{m}})
}

func (b *Broker) handleMoves(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.admin(w, r); !ok {
		return
	}
	if _, ok := parseFlag(w, r, "detail"); !ok {
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Moves []struct{} `json:"moves"`
	}{[]struct{}{}})
}

func (b *Broker) handleDecommission(w http.ResponseWriter, r *http.Request) {
	if !b.member(w, r) {
		return
	}
	dryRun, ok := parseFlag(w, r, "dry_run")
	if !ok {
		return
	}
	reasons := b.decommissionBlockers()
	if dryRun {
		writeJSON(w, http.StatusOK, struct {
			Member            string        `json:"member"`
			WouldDecommission bool          `json:"would_decommission"`
			Reasons           []blockReason `json:"reasons"`
			Voter             bool          `json:"voter"`
			OwnedPartitions   int           `json:"owned_partitions"`
			InboundMoves      int           `json:"inbound_moves"`
		}{NodeID, false, reasons, true, b.ownedPartitions(), 0})
		return
	}
	writeJSON(w, http.StatusConflict, struct {
		Error   string        `json:"error"`
		Reasons []blockReason `json:"reasons"`
	}{fmt.Sprintf("decommission of %s refused: %s; %s", NodeID, reasons[0].Message, reasons[1].Message), reasons})
}

// handleCancelDecommission clears a draining mark this node never has: 204, as a cancel
// of a node that is not draining answers.
func (b *Broker) handleCancelDecommission(w http.ResponseWriter, r *http.Request) {
	if !b.member(w, r) {
		return
	}
	if r.URL.Query().Has("dry_run") {
		writeError(w, http.StatusBadRequest, "a cancel cannot be dry-run")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleForget removes a Raft server that has no member record. The only server here
// is this node, the leader, which forget refuses (400), as it refuses any member.
func (b *Broker) handleForget(w http.ResponseWriter, r *http.Request) {
	if _, ok := b.admin(w, r); !ok {
		return
	}
	if id := r.PathValue("id"); id != NodeID {
		writeError(w, http.StatusNotFound, fmt.Sprintf("raft server %q not found", id))
		return
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("raft server %q is the leader itself: forget removes only a server with no member record", NodeID))
}
