package replay

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/narad/narad/internal/client"
)

// fakeTopic holds partitions of messages; offsets below oldest are gone (410).
type fakeTopic struct {
	parts  [][]string
	oldest []int64
	calls  int
}

func (f *fakeTopic) Topic(ctx context.Context, name string) (*client.Topic, error) {
	if name != "t" {
		return nil, &client.Error{Op: client.OpTopicInfo, Status: 404, Message: "not found"}
	}
	t := &client.Topic{Name: name, Partitions: len(f.parts)}
	for i, p := range f.parts {
		var oldest int64
		if f.oldest != nil {
			oldest = f.oldest[i]
		}
		t.PartitionStats = append(t.PartitionStats, client.PartitionStats{Index: i, OldestOffset: oldest, HighWatermark: int64(len(p))})
	}
	return t, nil
}

func (f *fakeTopic) Replay(ctx context.Context, topic string, p int, off int64) (*client.Message, error) {
	f.calls++
	if f.oldest != nil && off < f.oldest[p] {
		return nil, &client.Error{Op: client.OpReplay, Status: 410, Message: "gone"}
	}
	if off >= int64(len(f.parts[p])) {
		return nil, nil
	}
	return &client.Message{Topic: topic, Partition: p, Offset: off, Payload: []byte(`"` + f.parts[p][off] + `"`)}, nil
}

func collect(t *testing.T, src Source, o Options) ([]string, error) {
	t.Helper()
	var got []string
	_, err := Run(context.Background(), src, o, func(m *client.Message) error {
		got = append(got, fmt.Sprintf("p%d@%d=%s", m.Partition, m.Offset, m.Payload))
		return nil
	})
	return got, err
}

func TestReadsEachPartitionInTurnToItsTail(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"a", "b"}, {}, {"c"}}}
	got, err := collect(t, src, Options{Topic: "t", To: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`p0@0="a"`, `p0@1="b"`, `p2@0="c"`}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestOffsetToAndCount(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"a", "b", "c", "d"}, {"e"}}}
	p := 0
	got, _ := collect(t, src, Options{Topic: "t", Partition: &p, Start: FromOffset, Offset: 1, To: 2})
	if want := []string{`p0@1="b"`, `p0@2="c"`}; !slices.Equal(got, want) {
		t.Errorf("--offset 1 --to 2: got %v, want %v", got, want)
	}
	got, _ = collect(t, src, Options{Topic: "t", To: -1, Count: 2})
	if want := []string{`p0@0="a"`, `p0@1="b"`}; !slices.Equal(got, want) {
		t.Errorf("--count 2: got %v, want %v", got, want)
	}
}

// With a Match, only what it keeps is emitted and Count counts those: the read goes
// past the messages it drops until Count matched, and reads no further.
func TestMatchCountsWhatItKeeps(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"fail1", "ok", "fail2", "fail3"}}}
	mt := &Matcher{Grep: regexp.MustCompile(`fail`)}
	got, err := collect(t, src, Options{Topic: "t", To: -1, Count: 2, Match: mt})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`p0@0="fail1"`, `p0@2="fail2"`}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if mt.Read != 3 || mt.Matched != 2 || src.calls != 3 {
		t.Errorf("read %d, matched %d, replay calls %d; want 3, 2, 3", mt.Read, mt.Matched, src.calls)
	}
}

func TestSkipsWhatRetentionDropped(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"a", "b", "c"}}, oldest: []int64{2}}
	p := 0
	got, err := collect(t, src, Options{Topic: "t", Partition: &p, Start: FromOffset, Offset: 0, To: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`p0@2="c"`}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFromTailFollowsNewMessagesOnly(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"old"}, {}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	wrapped := &growing{fakeTopic: src, after: 3}
	_, err := Run(ctx, wrapped, Options{Topic: "t", Start: FromTail, To: -1, Follow: true, Count: 1, PollInterval: time.Millisecond},
		func(m *client.Message) error {
			got = append(got, string(m.Payload))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`"new"`}; !slices.Equal(got, want) {
		t.Errorf("got %v, want only the message produced after the start", got)
	}
}

// growing appends a message to partition 1 after a few replay calls.
type growing struct {
	*fakeTopic
	after int
}

func (g *growing) Replay(ctx context.Context, topic string, p int, off int64) (*client.Message, error) {
	if g.calls == g.after {
		g.parts[1] = append(g.parts[1], "new")
	}
	return g.fakeTopic.Replay(ctx, topic, p, off)
}

func TestNoSuchPartitionIsItsOwnError(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"a"}}}
	p := 7
	_, err := collect(t, src, Options{Topic: "t", Partition: &p, To: -1})
	if !errors.Is(err, ErrNoSuchPartition) {
		t.Errorf("err %v, want ErrNoSuchPartition", err)
	}
}

func TestStopEndsWithoutError(t *testing.T) {
	src := &fakeTopic{parts: [][]string{{"a", "b", "c"}}}
	n, err := Run(context.Background(), src, Options{Topic: "t", To: -1}, func(*client.Message) error { return ErrStop })
	if err != nil || n != 1 {
		t.Errorf("n %d err %v, want 1 and nil", n, err)
	}
}

// growingTopic is a fakeTopic that gains a partition, holding one message, at its
// grow-th replay read: the topic edited while a follow runs.
type growingTopic struct {
	fakeTopic
	grow, reads int
}

func (g *growingTopic) Replay(ctx context.Context, topic string, p int, off int64) (*client.Message, error) {
	if g.reads++; g.reads == g.grow {
		g.parts = append(g.parts, []string{"new"})
	}
	return g.fakeTopic.Replay(ctx, topic, p, off)
}

// A follow of every partition follows those the topic gains while it runs, from their
// oldest message (all of it came after the start).
func TestFollowTakesPartitionsAddedSince(t *testing.T) {
	src := &growingTopic{fakeTopic: fakeTopic{parts: [][]string{{"a"}, {}}}, grow: 3}
	// The deadline only ends a run that never sees the new partition.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	_, err := Run(ctx, src, Options{Topic: "t", To: -1, Start: FromTail, Follow: true, Count: 1,
		PollInterval: time.Millisecond, PartitionCheck: time.Millisecond}, func(m *client.Message) error {
		got = append(got, fmt.Sprintf("p%d@%d=%s", m.Partition, m.Offset, m.Payload))
		return nil
	})
	if want := []string{`p2@0="new"`}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
}

// backwardsTopic answers every read at offset 1 or later with the message at offset 0:
// a node that answers wrong.
type backwardsTopic struct{ fakeTopic }

func (f *backwardsTopic) Replay(ctx context.Context, topic string, p int, off int64) (*client.Message, error) {
	if f.calls >= 100 {
		return nil, errors.New("read round and round")
	}
	m, err := f.fakeTopic.Replay(ctx, topic, p, off)
	if m != nil {
		m.Offset = 0
	}
	return m, err
}

// A read answered with an offset below the one asked moves on from the one asked, never
// back: a node that answers each read with an older message would have had replay read
// the same offsets (and print the same message) forever.
func TestAnAnswerBelowTheOffsetAskedDoesNotGoBack(t *testing.T) {
	src := &backwardsTopic{fakeTopic{parts: [][]string{{"a", "b", "c"}}}}
	got, err := collect(t, src, Options{Topic: "t", To: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || src.calls != 4 {
		t.Errorf("got %v in %d reads, want 3 messages in 4 reads", got, src.calls)
	}
}

// partialTopic answers the first topic info as a v3.1 node with partition 1's owner
// down (partial, a placeholder of zeros), and the later ones whole; at the first whole
// answer a message is written to partition 1 after its tail.
type partialTopic struct {
	fakeTopic
	infos int
}

func (f *partialTopic) Topic(ctx context.Context, name string) (*client.Topic, error) {
	f.infos++
	t, err := f.fakeTopic.Topic(ctx, name)
	if err != nil {
		return nil, err
	}
	if f.infos == 1 {
		t.Partial = true
		t.PartitionStats[1] = client.PartitionStats{Index: 1, Status: "owner_unavailable"}
	}
	if f.infos == 2 {
		f.parts[1] = append(f.parts[1], "new")
	}
	return t, nil
}

// A watch from the tail (sub --peek) does not take a placeholder's zeros for a tail:
// that would show the partition's whole history as new. The partition is watched from
// its tail once topic info has one, and both are said.
func TestTailOfAPartitionWhoseOwnerIsDownIsWaitedFor(t *testing.T) {
	src := &partialTopic{fakeTopic: fakeTopic{parts: [][]string{{"a"}, {"old1", "old2"}, {}}}}
	var unknown []int
	var found []string
	got, err := collect(t, src, Options{Topic: "t", Start: FromTail, To: -1, Follow: true, Count: 1,
		PollInterval: time.Millisecond, PartitionCheck: time.Millisecond,
		OnTailUnknown: func(p int) { unknown = append(unknown, p) },
		OnTailFound:   func(p int, at int64) { found = append(found, fmt.Sprintf("p%d@%d", p, at)) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`p1@2="new"`}; !slices.Equal(got, want) {
		t.Errorf("emitted %v, want %v (nothing of the history before the tail)", got, want)
	}
	if !slices.Equal(unknown, []int{1}) || !slices.Equal(found, []string{"p1@2"}) {
		t.Errorf("told of unknown tails %v and found ones %v, want [1] and [p1@2]", unknown, found)
	}
}
