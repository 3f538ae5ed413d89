package devbroker

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// GET /metrics: the Prometheus text exposition, with a real node's series names for
// what a single in-memory node has (per-partition queue health, sizes, traffic and
// fan-out lag). A real node refreshes its partition gauges every 5 seconds; these are
// read at the scrape. With security on it needs any valid credentials, as on a real
// node's API port.

// partitionMetrics is one partition's queue health, read under the topic's lock.
type partitionMetrics struct {
	produced, delivered, lag, inFlight, ackedAhead, size int64
	oldestAgeSeconds                                     float64
}

func (t *topic) metrics() ([]partitionMetrics, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deleted {
		return nil, errTopicNotFound
	}
	now := t.now()
	t.expireLocked(now)
	out := make([]partitionMetrics, len(t.parts))
	for i, p := range t.parts {
		p.trim(now, t.retention())
		m := partitionMetrics{
			produced: p.next(), delivered: p.delivered, lag: p.next() - p.floor,
			inFlight: int64(p.inFlight), ackedAhead: int64(p.ackedAhead), size: p.size,
		}
		if oldest := p.at(p.floor); oldest != nil {
			m.oldestAgeSeconds = max(0, now.Sub(oldest.produced).Seconds())
		}
		out[i] = m
	}
	return out, nil
}

// exposition writes series in the text format: each family's HELP and TYPE once, then
// its samples.
type exposition struct {
	sb   strings.Builder
	seen map[string]bool
}

func (e *exposition) sample(name, kind, help string, value float64, labels ...string) {
	if !e.seen[name] {
		e.seen[name] = true
		fmt.Fprintf(&e.sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	e.sb.WriteString(name)
	if len(labels) > 0 {
		e.sb.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				e.sb.WriteByte(',')
			}
			// Topic names and numbers need no escaping: [A-Za-z0-9._-] only.
			fmt.Fprintf(&e.sb, "%s=%q", labels[i], labels[i+1])
		}
		e.sb.WriteByte('}')
	}
	e.sb.WriteByte(' ')
	e.sb.WriteString(strconv.FormatFloat(value, 'g', -1, 64))
	e.sb.WriteByte('\n')
}

func (b *Broker) handleMetrics(w http.ResponseWriter, r *http.Request) {
	b.count(OpMetrics)
	if _, _, ok := b.authenticate(w, r); !ok {
		return
	}
	// A fault stands for a node that keeps its metrics from this user (403) or has none
	// on this port (404), which clients must report rather than guess around.
	if f, hit := b.faults.decide(OpMetrics); hit {
		b.writeFault(w, f)
		return
	}
	topics, links := b.metricsNow()
	e := &exposition{seen: map[string]bool{}}
	e.topics(topics)
	e.partitions(topics)
	e.fanout(links)
	body := e.sb.String()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body))
}

// topicMetrics is one topic's partitions as a scrape reads them.
type topicMetrics struct {
	name  string
	parts []partitionMetrics
}

// metricsNow reads every topic's partitions, and the fan-out links from them.
func (b *Broker) metricsNow() ([]topicMetrics, []*link) {
	var all []topicMetrics
	var links []*link
	for _, name := range b.topicNames() {
		t := b.topic(name)
		if t == nil {
			continue
		}
		ms, err := t.metrics()
		if err != nil {
			continue // deleted since the list was taken
		}
		all = append(all, topicMetrics{name, ms})
		links = append(links, t.childLinks()...)
	}
	return all, links
}

// topics writes the cluster's counts and each topic's bytes.
func (e *exposition) topics(all []topicMetrics) {
	partitions := 0
	for _, t := range all {
		partitions += len(t.parts)
	}
	e.sample("narad_topics_total", "gauge", "Topics in the cluster.", float64(len(all)))
	e.sample("narad_partitions_total", "gauge", "Partitions this node owns.", float64(partitions))
	for _, t := range all {
		var bytes int64
		for _, p := range t.parts {
			bytes += p.size
		}
		e.sample("narad_topic_bytes", "gauge", "Bytes a topic uses on this node.", float64(bytes), "topic", t.name)
	}
}

// partitions writes the per-partition series, family by family.
func (e *exposition) partitions(all []topicMetrics) {
	series := []struct {
		name, kind, help string
		value            func(partitionMetrics) float64
	}{
		{"narad_partition_size_bytes", "gauge", "Bytes a partition uses.", func(m partitionMetrics) float64 { return float64(m.size) }},
		{"narad_messages_produced_total", "counter", "Messages appended to a partition log.", func(m partitionMetrics) float64 { return float64(m.produced) }},
		{"narad_messages_consumed_total", "counter", "Messages handed to queue consumers.", func(m partitionMetrics) float64 { return float64(m.delivered) }},
		{"narad_consumer_lag_messages", "gauge", "Messages consumers can still take: the high watermark minus the committed frontier.", func(m partitionMetrics) float64 { return float64(m.lag) }},
		{"narad_oldest_unconsumed_message_age_seconds", "gauge", "Age of the oldest message not yet acked; 0 when caught up.", func(m partitionMetrics) float64 { return m.oldestAgeSeconds }},
		{"narad_inflight_size", "gauge", "Messages leased right now.", func(m partitionMetrics) float64 { return float64(m.inFlight) }},
		{"narad_acked_ahead_size", "gauge", "Acks held above the oldest unacked message.", func(m partitionMetrics) float64 { return float64(m.ackedAhead) }},
	}
	for _, s := range series {
		for _, t := range all {
			for i, p := range t.parts {
				e.sample(s.name, s.kind, s.help, s.value(p), "topic", t.name, "partition", strconv.Itoa(i))
			}
		}
	}
}

// fanout writes each link's lag per partition, then what each child never got.
func (e *exposition) fanout(links []*link) {
	for _, l := range links {
		for i, lag := range l.partitionLag() {
			e.sample("narad_fanout_lag_messages", "gauge", "Parent messages not yet copied to the child.", float64(lag),
				"parent", l.parent.name, "child", l.child.name, "partition", strconv.Itoa(i))
		}
	}
	for _, l := range links {
		l.parent.mu.Lock()
		dropped := l.dropped
		l.parent.mu.Unlock()
		e.sample("narad_fanout_child_dropped_messages", "counter", "Parent messages a child never got: they aged out before they were copied.",
			float64(dropped), "parent", l.parent.name, "child", l.child.name)
	}
}
