package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/consumer"
	"github.com/narad/narad/internal/render"
)

// What a run could not finish, said so that nothing is silently left behind: the
// settlements never confirmed, as shell input that sends them again.

// pendingSettle is a settlement to send again: the command (ack, extend, nack) and
// the handle.
type pendingSettle struct {
	action, handle string
}

// writeUnconfirmed lists settlements that never got a final answer (they may or may
// not have happened; sending them again is safe) as shell input that sends them
// again when pasted: one `narad ACTION TOPIC -` here-document per action, its
// delimiter quoted so that the shell takes the handles verbatim. A paste of the block
// works whatever the number of handles, and the handles stay one a line for a script.
func (e runEnv) writeUnconfirmed(topic string, ps []pendingSettle) {
	if len(ps) == 0 {
		return
	}
	var order []string
	by := map[string][]string{}
	for _, p := range ps {
		if _, ok := by[p.action]; !ok {
			order = append(order, p.action)
		}
		by[p.action] = append(by[p.action], render.Escape(p.handle))
	}
	var counts []string
	for _, a := range order {
		counts = append(counts, countOf(int64(len(by[a])), a, a+"s"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "narad: %s not confirmed by the node; to send again, paste:\n", strings.Join(counts, " and "))
	prefix := "narad"
	if e.ServerFlag != "" {
		if conn, err := e.Connection(); err == nil {
			prefix += " --server " + shellWord(config.RedactURL(conn.Server))
		}
	}
	if e.ConfigFlag != "" {
		// Escaped first: a path is the user's typing, and must not drive the terminal.
		prefix += " --config " + shellWord(render.Escape(e.ConfigFlag))
	}
	if e.ContextFlag != "" {
		prefix += " --context " + shellWord(e.ContextFlag)
	}
	if strings.HasPrefix(topic, "-") {
		topic = "-- " + topic
	}
	for _, a := range order {
		hs := by[a]
		eof := "EOF"
		for slices.Contains(hs, eof) {
			eof += "_"
		}
		fmt.Fprintf(&b, "%s %s %s - <<'%s'\n%s\n%s\n", prefix, a, topic, eof, strings.Join(hs, "\n"), eof)
	}
	io.WriteString(e.IO.ErrOut, b.String())
}

// writeRunLeftovers says what a sub run could not finish: each settlement that never
// got a final answer, as lines that send it again, and a consume cut in flight.
func (e runEnv) writeRunLeftovers(topic string, res consumer.Result) {
	ps := make([]pendingSettle, len(res.Unconfirmed))
	for i, u := range res.Unconfirmed {
		ps[i] = pendingSettle{u.Action.String(), u.Handle}
	}
	e.writeUnconfirmed(topic, ps)
	if res.AnswerLost {
		fmt.Fprintln(e.IO.ErrOut, "narad: a consume was cut while the node may have been answering it; "+
			"messages it leased, if any, come back when their lease runs out")
	}
}

// shellWord is s as one shell word: as is when it holds nothing a shell treats
// specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return shellQuote(s)
}
