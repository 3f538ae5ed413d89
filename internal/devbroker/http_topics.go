package devbroker

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// NodeID is the dev broker's member ID: the owner of every partition and the one member
// of its cluster.
const NodeID = "narad-0"

// topicJSON is a topic as the API describes it, fields in a real node's order.
type topicJSON struct {
	Name                      string `json:"name"`
	ID                        string `json:"id"`
	Partitions                int    `json:"partitions"`
	RetentionMs               int64  `json:"retention_ms"`
	VisibilityTimeoutMs       int64  `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition   int    `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int    `json:"max_acked_ahead_per_partition"`
	CreatedAt                 int64  `json:"created_at"`
	Owner                     string `json:"owner,omitempty"`
	// Role is standalone, parent or child; absent in the answer to a create without a
	// parent, as on a real node.
	Role          string   `json:"role,omitempty"`
	Children      []string `json:"children,omitempty"`
	Parent        string   `json:"parent,omitempty"`
	AttachEpoch   string   `json:"attach_epoch,omitempty"`
	FanoutDelayMs int64    `json:"fanout_delay_ms,omitempty"`
	AttachOffsets []int64  `json:"attach_offsets,omitempty"`
	// SchemaVersion is always in topic info (0 without a schema), elsewhere only with one.
	SchemaVersion  *int            `json:"schema_version,omitempty"`
	Schema         json.RawMessage `json:"schema,omitempty"`
	PartitionStats []partitionJSON `json:"partition_stats,omitempty"`
}

type partitionJSON struct {
	Index         int    `json:"index"`
	OldestOffset  int64  `json:"oldest_offset"`
	NextOffset    int64  `json:"next_offset"`
	HighWatermark int64  `json:"high_watermark"`
	SizeBytes     int64  `json:"size_bytes"`
	OwnerNode     string `json:"owner_node"`
	// Status is "ok" (the owner, this node, reported); absent in legacy mode, as on a
	// node older than v3.1.
	Status string `json:"status,omitempty"`
}

func (t *topic) partitionCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.parts)
}

// view is t as the API's topic object, without statistics.
func (t *topic) view() topicJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.spec
	v := topicJSON{
		Name: t.name, ID: t.id, Partitions: len(t.parts), RetentionMs: s.RetentionMs,
		VisibilityTimeoutMs:       s.VisibilityTimeout.Milliseconds(),
		MaxInFlightPerPartition:   s.MaxInFlightPerPartition,
		MaxAckedAheadPerPartition: s.MaxAckedAheadPerPartition,
		CreatedAt:                 t.created.Unix(), Owner: t.owner, Role: "standalone",
	}
	if len(t.children) > 0 {
		v.Role = "parent"
		for _, l := range t.children {
			v.Children = append(v.Children, l.child.name)
		}
	}
	if l := t.up; l != nil {
		v.Role, v.Parent, v.AttachEpoch = "child", l.parent.name, l.epoch
		v.FanoutDelayMs, v.AttachOffsets = l.delay.Milliseconds(), l.attachOffsets
	}
	if n := t.schema.Load().version(); n > 0 {
		v.SchemaVersion = &n
	}
	return v
}

func (b *Broker) handleCreateTopic(w http.ResponseWriter, r *http.Request) {
	b.count(OpCreateTopic)
	u, _, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	var req struct {
		Name                      string          `json:"name"`
		Partitions                int             `json:"partitions"`
		RetentionMs               int64           `json:"retention_ms"`
		VisibilityTimeoutMs       int64           `json:"visibility_timeout_ms"`
		MaxInFlightPerPartition   int             `json:"max_in_flight_per_partition"`
		MaxAckedAheadPerPartition int             `json:"max_acked_ahead_per_partition"`
		Schema                    json.RawMessage `json:"schema"`
		Parent                    string          `json:"parent"`
		FanoutDelayMs             int64           `json:"fanout_delay_ms"`
		Owner                     string          `json:"owner"` // ignored: the caller owns what it creates
	}
	if !decodeBody(w, r, &req, http.StatusRequestEntityTooLarge) {
		return
	}
	if !b.permit(w, u, permCreate, req.Name) {
		return
	}
	if req.Parent != "" {
		// Creating a child also needs the right to manage its parent.
		p := b.topic(req.Parent)
		if p == nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("parent topic %q not found", req.Parent))
			return
		}
		if !b.permitTopic(w, u, permManage, req.Parent, p) {
			return
		}
	}
	if req.VisibilityTimeoutMs < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("visibility_timeout_ms %d: must be positive", req.VisibilityTimeoutMs))
		return
	}
	// Past this the conversion to a Duration wraps, possibly into a lease of a few ms.
	if maxMs := int64(math.MaxInt64 / time.Millisecond); req.VisibilityTimeoutMs > maxMs {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("visibility_timeout_ms %d: must be at most %d", req.VisibilityTimeoutMs, maxMs))
		return
	}
	spec := TopicSpec{
		Name: req.Name, Partitions: req.Partitions, RetentionMs: req.RetentionMs,
		VisibilityTimeout:         time.Duration(req.VisibilityTimeoutMs) * time.Millisecond,
		MaxInFlightPerPartition:   req.MaxInFlightPerPartition,
		MaxAckedAheadPerPartition: req.MaxAckedAheadPerPartition,
		Parent:                    req.Parent, FanoutDelayMs: req.FanoutDelayMs,
	}
	if len(req.Schema) > 0 && string(req.Schema) != "null" {
		spec.Schema = string(req.Schema)
	}
	owner := ""
	if u != nil {
		owner = u.Name
	}
	t, err := b.createTopic(spec, owner)
	if err != nil {
		writeErr(w, err)
		return
	}
	v := t.view()
	if v.Role == "standalone" {
		v.Role = ""
	}
	writeJSON(w, http.StatusCreated, v)
}

// handleListTopics pages through topics in name order. The page is cut first and the
// topics the caller cannot read are removed after, as on a real node, so a page may
// hold fewer than limit (even none) while next_page_token is set: a client must follow
// the token, not count.
func (b *Broker) handleListTopics(w http.ResponseWriter, r *http.Request) {
	b.count(OpListTopics)
	u, _, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = min(n, 1000)
	}
	after := q.Get("page_token")
	if after != "" && !validTopicName(after) {
		writeError(w, http.StatusBadRequest, "page_token is not one this node gave out")
		return
	}
	out := struct {
		Topics        []topicJSON `json:"topics"`
		NextPageToken string      `json:"next_page_token"`
	}{Topics: []topicJSON{}}
	names := b.topicNames()
	i, _ := slices.BinarySearch(names, after)
	if i < len(names) && names[i] == after {
		i++
	}
	page := names[i:min(i+limit, len(names))]
	if i+limit < len(names) {
		out.NextPageToken = page[len(page)-1]
	}
	for _, n := range page {
		if t := b.topic(n); t != nil && u.mayTopic(permRead, n, t) {
			out.Topics = append(out.Topics, t.view())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleTopicInfo(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpTopicInfo, permRead)
	if !ok {
		return
	}
	only := -1
	if s := r.URL.Query().Get("partition"); s != "" {
		p, err := parsePartition(s, t.partitionCount())
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		only = p
	}
	st, err := t.stats()
	if err != nil {
		writeNotFound(w, t.name)
		return
	}
	out := t.view()
	h := t.schema.Load()
	version := h.version()
	out.SchemaVersion = &version
	if version > 0 {
		out.Schema = h.current().doc
	}
	status := "ok"
	if b.legacy.Load() {
		status = ""
	}
	for _, p := range st.Partitions {
		if only >= 0 && p.Index != only {
			continue
		}
		out.PartitionStats = append(out.PartitionStats, partitionJSON{
			Index: p.Index, OldestOffset: p.OldestOffset, NextOffset: p.NextOffset,
			HighWatermark: p.NextOffset, SizeBytes: p.SizeBytes, OwnerNode: NodeID, Status: status,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleDeleteTopic(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpDeleteTopic, permManage)
	if !ok {
		return
	}
	if err := b.DeleteTopic(t.name); err != nil {
		writeNotFound(w, t.name)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleEditTopic is PATCH: the groups apply one after another (retention, the caps,
// partitions, schema) and the first refusal answers, leaving the groups before it
// applied, as on a real node.
func (b *Broker) handleEditTopic(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpEditTopic, permManage)
	if !ok {
		return
	}
	var req struct {
		Partitions                *int            `json:"partitions"`
		RetentionMs               *int64          `json:"retention_ms"`
		MaxInFlightPerPartition   *int            `json:"max_in_flight_per_partition"`
		MaxAckedAheadPerPartition *int            `json:"max_acked_ahead_per_partition"`
		Schema                    json.RawMessage `json:"schema"`
		SchemaBaseVersion         *int            `json:"schema_base_version"`
		VisibilityTimeoutMs       *int64          `json:"visibility_timeout_ms"`
	}
	if !decodeBody(w, r, &req, http.StatusRequestEntityTooLarge) {
		return
	}
	switch {
	case req.VisibilityTimeoutMs != nil:
		writeError(w, http.StatusBadRequest, "visibility_timeout_ms cannot be changed after the topic is created (consumers size their lease extensions on it): create a new topic instead")
		return
	case req.SchemaBaseVersion != nil && req.Schema == nil:
		writeError(w, http.StatusBadRequest, "schema_base_version needs schema")
		return
	case req.Partitions == nil && req.RetentionMs == nil && req.MaxInFlightPerPartition == nil &&
		req.MaxAckedAheadPerPartition == nil && req.Schema == nil:
		writeError(w, http.StatusBadRequest, "nothing to change: give at least one of partitions, retention_ms, max_in_flight_per_partition, max_acked_ahead_per_partition or schema")
		return
	}
	var err error
	if req.RetentionMs != nil {
		err = t.setRetention(*req.RetentionMs)
	}
	if err == nil && (req.MaxInFlightPerPartition != nil || req.MaxAckedAheadPerPartition != nil) {
		err = t.setCaps(req.MaxInFlightPerPartition, req.MaxAckedAheadPerPartition)
	}
	if err == nil && req.Partitions != nil {
		err = t.grow(*req.Partitions)
	}
	if err == nil && req.Schema != nil {
		err = b.setSchema(t, req.Schema, req.SchemaBaseVersion)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t.view())
}

// setRetention is PATCH retention_ms: 0 is the node's default. A parent keeps its
// messages for at least its longest delay child's delay plus an hour (409).
func (t *topic) setRetention(ms int64) error {
	if err := orDefault(&ms, DefaultRetention.Milliseconds(), "retention_ms"); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return notFoundf("topic %q not found", t.name)
	}
	for _, l := range t.children {
		if l.delay > 0 && retentionOf(ms) < l.delay+delayRetentionMargin {
			return conflictf("retention_ms %d is too short for delay child %q: a parent keeps messages for at least the delay (%d ms) plus one hour",
				ms, l.child.name, l.delay.Milliseconds())
		}
	}
	t.spec.RetentionMs = ms
	return nil
}

// setCaps is PATCH max_in_flight_per_partition and max_acked_ahead_per_partition (nil:
// unchanged, 0: the node's default). A raised cap may free messages, so waiters wake.
func (t *topic) setCaps(inFlight, ackedAhead *int) error {
	spec := TopicSpec{}
	if inFlight != nil {
		spec.MaxInFlightPerPartition = *inFlight
		if err := orDefault(&spec.MaxInFlightPerPartition, DefaultMaxInFlight, "max_in_flight_per_partition"); err != nil {
			return err
		}
	}
	if ackedAhead != nil {
		spec.MaxAckedAheadPerPartition = *ackedAhead
		if err := orDefault(&spec.MaxAckedAheadPerPartition, DefaultMaxAckedAhead, "max_acked_ahead_per_partition"); err != nil {
			return err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return notFoundf("topic %q not found", t.name)
	}
	if inFlight != nil {
		t.spec.MaxInFlightPerPartition = spec.MaxInFlightPerPartition
	}
	if ackedAhead != nil {
		t.spec.MaxAckedAheadPerPartition = spec.MaxAckedAheadPerPartition
	}
	t.notifyUsed = true
	t.wakeLocked()
	return nil
}

// grow is PATCH partitions: more than today, at most MaxPartitions. New keys may then
// map to other partitions.
func (t *topic) grow(n int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.deleted:
		return notFoundf("topic %q not found", t.name)
	case n <= len(t.parts):
		return invalidf("partitions %d: must be more than the current %d (partitions only grow)", n, len(t.parts))
	case n > MaxPartitions:
		return invalidf("partitions %d: must be at most %d", n, MaxPartitions)
	}
	for i := len(t.parts); i < n; i++ {
		t.parts = append(t.parts, &partition{index: i})
	}
	t.spec.Partitions = n
	return nil
}

// setSchema is PATCH schema: the document becomes the next version, unless it equals
// the current one. A child's history is its parent's (409); a parent's change reaches
// its children.
func (b *Broker) setSchema(t *topic, doc json.RawMessage, base *int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.topics[t.name] != t {
		return notFoundf("topic %q not found", t.name)
	}
	if t.up != nil {
		return conflictf("topic %q is a child of %q, whose schema it follows: change the parent's", t.name, t.up.parent.name)
	}
	cur := t.schema.Load()
	if base != nil && *base != cur.version() {
		return conflictf("schema version conflict: schema_base_version is %d, the current version is %d", *base, cur.version())
	}
	next, err := registerSchema(cur, doc)
	if errors.Is(err, errSchemaUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	t.schema.Store(next)
	for _, l := range t.children {
		l.child.schema.Store(next)
	}
	return nil
}

func (b *Broker) handleTopicSchema(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpTopicSchema, permRead)
	if !ok {
		return
	}
	type versionJSON struct {
		Version int             `json:"version"`
		Schema  json.RawMessage `json:"schema"`
	}
	h := t.schema.Load()
	out := struct {
		Topic    string        `json:"topic"`
		Version  int           `json:"version"`
		Versions []versionJSON `json:"versions"`
	}{Topic: t.name, Version: h.version(), Versions: []versionJSON{}}
	for i := 0; i < h.version(); i++ {
		out.Versions = append(out.Versions, versionJSON{i + 1, h.versions[i].doc})
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleAttachChild(w http.ResponseWriter, r *http.Request) {
	b.count(OpAttachChild)
	u, _, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	var req struct {
		Child   *string `json:"child"`
		DelayMs int64   `json:"delay_ms"`
	}
	if !decodeBody(w, r, &req, http.StatusBadRequest) {
		return
	}
	parent := r.PathValue("topic")
	switch {
	case req.Child == nil || *req.Child == "":
		writeError(w, http.StatusBadRequest, "child required")
		return
	case *req.Child == parent:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("topic %q cannot be attached to itself", parent))
		return
	}
	if err := checkDelay(req.DelayMs); err != nil {
		writeErr(w, err)
		return
	}
	p, c := b.topic(parent), b.topic(*req.Child)
	switch {
	case p == nil:
		writeNotFound(w, parent)
		return
	case c == nil:
		writeNotFound(w, *req.Child)
		return
	}
	// Linking needs the right to manage both topics.
	if !b.permitTopic(w, u, permManage, p.name, p) || !b.permitTopic(w, u, permManage, c.name, c) {
		return
	}
	if err := b.Attach(parent, *req.Child, time.Duration(req.DelayMs)*time.Millisecond); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, p.view())
}

func (b *Broker) handleListChildren(w http.ResponseWriter, r *http.Request) {
	t, _, ok := b.topicRequest(w, r, OpListChildren, permRead)
	if !ok {
		return
	}
	type childJSON struct {
		Name        string `json:"name"`
		DelayMs     int64  `json:"delay_ms"`
		LagMessages int64  `json:"lag_messages"`
		LagComplete bool   `json:"lag_complete"` // every partition reported: always, on one node
	}
	out := struct {
		Parent   string      `json:"parent"`
		Children []childJSON `json:"children"`
	}{Parent: t.name, Children: []childJSON{}}
	for _, l := range t.childLinks() {
		l.pump() // copies that came due since the last timer, with a test's clock
		out.Children = append(out.Children, childJSON{l.child.name, l.delay.Milliseconds(), l.lag(), true})
	}
	writeJSON(w, http.StatusOK, out)
}

func (b *Broker) handleDetachChild(w http.ResponseWriter, r *http.Request) {
	b.count(OpDetachChild)
	u, _, ok := b.authenticate(w, r)
	if !ok {
		return
	}
	parent, child := r.PathValue("topic"), r.PathValue("child")
	p, c := b.topic(parent), b.topic(child)
	switch {
	case p == nil:
		writeNotFound(w, parent)
		return
	case c == nil:
		writeNotFound(w, child)
		return
	}
	// Unlinking needs the right to manage either topic.
	if !u.mayTopic(permManage, parent, p) && !b.permitTopic(w, u, permManage, child, c) {
		return
	}
	if err := b.Detach(parent, child); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
