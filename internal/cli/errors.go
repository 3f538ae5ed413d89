package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"text/template"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/render"
)

// describeErr is err's text with the method and URL of a transport error left out:
// "produce: dial tcp 127.0.0.1:1: connect: connection refused".
func describeErr(err error) string {
	s := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		s = strings.Replace(s, ue.Error(), ue.Err.Error(), 1)
	}
	return s
}

// apiFatal is the one line for an error that stops a command (exit 1; 2 for a 400),
// with a hint on what to do about it. op names what was being done, topic is "" when none.
func apiFatal(f *Factory, c *client.Client, err error, op, topic string) error {
	var hint string
	code := ExitFailed
	switch client.StatusOf(err) {
	case http.StatusBadRequest:
		// The node refused the request as the flags built it (a partition the topic
		// does not have): bad input, never to be retried unchanged.
		code = ExitUsage
		if topic != "" {
			hint = fmt.Sprintf("see narad topic info %s", render.Escape(topic))
		}
	case 0:
		if errors.Is(err, context.Canceled) {
			return exitWith(ExitFailed, nil) // a signal: the exit code says it
		}
		// Not every error without a status is the network's: a --template that fails
		// on one message ends the run too, and must not send the user to --server.
		var execErr template.ExecError
		var urlErr *url.Error
		var netErr net.Error
		switch {
		case errors.As(err, &execErr):
			hint = "fix --template"
		case errors.As(err, &urlErr), errors.As(err, &netErr):
			hint = fmt.Sprintf("cannot reach %s; check --server or the context", c.BaseURL())
		}
	case http.StatusUnauthorized:
		hint = "check --user and --password, or the context's"
		if conn, cerr := f.Connection(); cerr == nil && conn.DroppedCredentials {
			hint = fmt.Sprintf("the current context's credentials are not sent to %s, which is not its server; pass --user and --password", c.BaseURL())
		}
	case http.StatusForbidden:
		if topic != "" {
			hint = fmt.Sprintf("the user has no %s grant for topic %s", grantFor(op), render.Escape(topic))
		} else {
			hint = fmt.Sprintf("the user has no %s grant", grantFor(op))
		}
	case http.StatusNotFound:
		if topic != "" {
			hint = fmt.Sprintf("no topic %s on %s; see narad topic ls", render.Escape(topic), c.BaseURL())
		}
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		hint = "narad does not follow redirects; give --server the node's own address"
	case http.StatusTooManyRequests:
		hint = "the node is limiting requests; wait and try again"
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusMisdirectedRequest:
		hint = "retried with backoff; try again later"
	}
	msg := describeErr(err)
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return exitWith(code, errors.New(msg))
}

// unknownCommandLine turns cobra's `unknown command "sbu" for "narad"` and the
// suggestions it puts on the lines below into one line with a hint; other messages
// are returned as they are.
func unknownCommandLine(msg string) string {
	if !strings.HasPrefix(msg, "unknown command ") {
		return msg
	}
	first, rest, _ := strings.Cut(msg, "\n")
	hint := "see narad --help"
	if _, names, ok := strings.Cut(rest, "Did you mean this?"); ok && len(strings.Fields(names)) > 0 {
		hint = "did you mean " + strings.Join(strings.Fields(names), " or ") + "? " + hint
	}
	return first + " (" + hint + ")"
}

// grantFor is the grant an operation needs (API.md, "Grants").
func grantFor(op string) string {
	switch op {
	case "produce":
		return "produce"
	case "ack", "extend", "nack", "topic info", "consume", "replay":
		return "consume"
	case "create topic":
		return "create"
	}
	return "admin"
}
