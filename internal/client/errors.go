package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/narad/narad/internal/textenc"
)

// Error is a non-success HTTP answer: the status and the server's own text.
// Errors that never got an answer (connection refused, timeouts, a cancelled
// context) are not *Error; they wrap the underlying error instead, so
// StatusOf tells "the node said no" apart from "the node could not be reached".
type Error struct {
	Op      Op     // what the client was doing; its Grant is what a 403 lacks
	Status  int    // HTTP status code
	Message string // the server's text, from {"error":"..."} or the plain-text body, trimmed
	// Plain is an answer that was not the API's JSON error: a router's 404 for a route
	// the node does not have (an older node, security off) rather than the API's own
	// 404 for a topic or user that does not exist.
	Plain bool
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = strings.ToLower(http.StatusText(e.Status))
	}
	// A proxy's plain text often starts with the status itself ("503 Service
	// Unavailable"): it is not said twice.
	if code := strconv.Itoa(e.Status); msg != code && !strings.HasPrefix(msg, code+" ") {
		msg = code + " " + msg
	}
	if e.Op == opNone {
		return msg
	}
	return fmt.Sprintf("%s: %s", e.Op, msg)
}

// StatusOf is the HTTP status carried by err (anywhere in its chain), or 0 when err
// is not an *Error.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsGone reports a 410: the lease ran out or the message was already settled, or a
// replayed offset is older than retention.
func IsGone(err error) bool { return StatusOf(err) == http.StatusGone }

// IsBusy reports an answer that asks to be tried again later (429, 502, 503, 421): a
// consume or replay read returns one once it has retried past the policy's budget.
// The node answers, but cannot serve now (it is starting, or the partition owner it
// relays to is down or moving).
func IsBusy(err error) bool { return ConsumeBusy(StatusOf(err)) }

// ConsumeBusy reports a status that asks a consume or replay read to be tried again
// later: 429, 502, 503 or 421 (BusyStatus is the settlements' and produce's set).
func ConsumeBusy(status int) bool { return retryableConsumeStatus(status) }

// maxErrorText bounds the text kept from an error body: a proxy's HTML error page
// should not flood a one-line error message.
const maxErrorText = 512

// errorText extracts the server's explanation from an error body. The API says
// errors are {"error":"..."}, but routers and relaying nodes answer in plain text,
// so anything that is not that JSON shape is shown as the text it is. It never fails.
func errorText(body []byte) string {
	if j, ok := jsonError(body); ok {
		return oneLine(j)
	}
	return oneLine(string(body))
}

// jsonError is the text of the API's {"error":"..."} shape, ok false for any other body.
func jsonError(body []byte) (string, bool) {
	var j struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Error != nil {
		return *j.Error, true
	}
	return "", false
}

// IsRouteMissing reports a plain-text 404: the node has no such route at all.
func IsRouteMissing(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound && e.Plain
}

// oneLine trims s and folds its whitespace runs (newlines included) to single spaces
// so an error stays one line on stderr; control characters are dropped because the
// text goes to a terminal, and bidi controls, zero-width and the other invisible
// format characters are written as visible escapes, as a payload's are: raw, they
// would reorder or hide the rest of the line the operator reads. A text longer than
// maxErrorText is cut, and says how much of it was left out: "… (5,123 bytes, 4,611
// not shown)".
func oneLine(s string) string {
	var b strings.Builder
	space := false
	s = strings.TrimSpace(s)
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r):
			continue
		}
		if b.Len() >= maxErrorText {
			fmt.Fprintf(&b, "… (%s bytes, %s not shown)", textenc.GroupDigits(int64(len(s))), textenc.GroupDigits(int64(len(s)-i)))
			break
		}
		if space && b.Len() > 0 { // a dropped control character leaves no space in front
			b.WriteByte(' ')
			space = false
		}
		if textenc.IsInvisible(r) {
			b.WriteString(textenc.Escape(string(r))) // as a payload's are
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
