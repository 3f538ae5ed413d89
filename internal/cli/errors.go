package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/render"
)

// describeErr is err's text with the method and URL of a transport error left out:
// "produce: dial tcp 127.0.0.1:1: connect: connection refused". The command's own
// deadline (--timeout) is said as such, not as Go's "context deadline exceeded".
func describeErr(err error) string {
	s := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		s = strings.Replace(s, ue.Error(), ue.Err.Error(), 1)
	}
	var te *client.TimeoutError
	var bl *boundedLook
	switch {
	case errors.As(err, &bl):
		s = strings.Replace(s, context.DeadlineExceeded.Error(), fmt.Sprintf("no answer within %s", roundDuration(bl.after)), 1)
	case errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &te):
		s = strings.Replace(s, context.DeadlineExceeded.Error(), "no answer before --timeout ran out", 1)
	}
	return s
}

// lookBound bounds a request a run makes on its own account, with no --timeout to
// bound it: sub -i's look at the topic before its screen opens, bench's clean-up. A
// variable for tests.
var lookBound = 30 * time.Second

// boundedLook is a request that lookBound (after) ended: describeErr says so, not
// --timeout, which the user may not have given.
type boundedLook struct {
	after time.Duration
	err   error
}

func (b *boundedLook) Error() string { return b.err.Error() }
func (b *boundedLook) Unwrap() error { return b.err }

// withinBound is err, marked as ended by its bound when ctx (made with lookBound) ran
// out before an answer came.
func withinBound(ctx context.Context, err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &boundedLook{after: lookBound, err: err}
	}
	return err
}

// apiFatal is the one line for an error that stops a command (exit 1; 2 for a 400),
// with a hint on what to do about it. topic is "" when the command has none. What
// was being done comes with err: a *client.Error names its client.Op, whose grant
// a 403 hint names, and every other error starts with it.
func (e runEnv) apiFatal(c *client.Client, err error, topic string) error {
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
		hint = transportHint(c.BaseURL(), err)
	case http.StatusUnauthorized:
		hint = "check --user and --password, or the context's"
		if conn, cerr := e.Connection(); cerr == nil && conn.DroppedCredentials {
			// Named: the context may be --context's or NARAD_CONTEXT's, not the current one.
			hint = fmt.Sprintf("the credentials of context %s are not sent to %s, which is not its server; pass --user and --password",
				render.Escape(conn.Context), c.BaseURL())
		}
	case http.StatusForbidden:
		var e *client.Error
		if errors.As(err, &e) && !nodeSaidWhy(err) {
			hint = missingGrant(e.Op.Grant(), topic)
		}
	case http.StatusNotFound:
		if topic != "" {
			hint = fmt.Sprintf("no topic %s on %s; see narad topic ls", render.Escape(topic), c.BaseURL())
		}
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		hint = "narad does not follow redirects; give --server the node's own address"
	case http.StatusTooManyRequests:
		hint = "the node is limiting requests; wait and try again"
	default:
		if busyStatus(err) {
			hint = "retried with backoff; try again later"
			if e := (*client.Error)(nil); errors.As(err, &e) && !e.Op.Retried() {
				// A change is sent once: sent twice it could fail on its own success.
				hint = "a change is sent once, not retried; see whether it was made before trying again"
			}
		}
	}
	msg := describeErr(err)
	if hint != "" {
		msg += " (" + hint + ")"
	}
	return exitWith(code, errors.New(msg))
}

// busyStatus is an answer that means "not now" (the node could not reach the
// partition owner, or is not it): what apiFatal's hints about retries are for, which a
// command that does not retry, or asks for no change, must word itself.
func busyStatus(err error) bool { return client.BusyStatus(client.StatusOf(err)) }

// adminFatal is apiFatal for the operator's commands: a 400 carries the command's
// own hint, a 409 is a conflict (exit 1) with the node's words, and a route the node
// does not have says which node it was.
func (e runEnv) adminFatal(c *client.Client, err error, topic, hint400 string) error {
	switch client.StatusOf(err) {
	case http.StatusBadRequest:
		if hint400 == "" {
			hint400 = "see --help"
		}
		return exitWith(ExitUsage, fmt.Errorf("%s (%s)", describeErr(err), hint400))
	case http.StatusConflict:
		if topic == "" {
			return exitWith(ExitFailed, errors.New(describeErr(err)))
		}
		return exitWith(ExitFailed, fmt.Errorf("%s (the node refused the change as it stands; see narad topic info %s)",
			describeErr(err), render.Escape(topic)))
	case http.StatusNotFound:
		if client.IsRouteMissing(err) {
			return exitWith(ExitFailed, fmt.Errorf("%s (the node at %s does not serve this; it may be an older version)",
				describeErr(err), c.BaseURL()))
		}
	}
	return e.apiFatal(c, err, topic)
}

// transportHint says what happened to a request that got no answer: the node took it
// and said nothing, it never connected, or the error is not the network's at all.
func transportHint(base string, err error) string {
	// Not every error without a status is the network's: a --template that fails on
	// one message ends the run too, and must not send the user to --server.
	var (
		execErr  template.ExecError
		jqErr    *render.JQError
		timeout  *client.TimeoutError
		noAnswer *client.NoAnswerError
		urlErr   *url.Error
		netErr   net.Error
		pathErr  *fs.PathError
	)
	cert := certificateHint(err)
	switch {
	case errors.As(err, &execErr):
		return "fix --template"
	case errors.As(err, &jqErr):
		return "fix --jq"
	case errors.As(err, &timeout) && timeout.Sent:
		return fmt.Sprintf("the node at %s accepted the connection but sent no answer within %s", base, timeout.After)
	case timeout != nil:
		return fmt.Sprintf("cannot reach %s within %s; check --server or the context", base, timeout.After)
	case errors.As(err, &noAnswer):
		return fmt.Sprintf("the node at %s accepted the connection but closed it without an answer", base)
	case errors.Is(err, context.DeadlineExceeded):
		return "waiting for " + base
	case errors.As(err, &pathErr):
		// A file's error (stdout on a full disk: its errno passes for a net.Error):
		// the node has nothing to do with it.
		return ""
	case cert != "":
		// The node was reached: its certificate is what to look at, not the address.
		return cert
	case errors.As(err, &urlErr), errors.As(err, &netErr):
		if base == config.DefaultServer && errors.Is(err, syscall.ECONNREFUSED) {
			// Most likely a first run with no broker yet: say how to get one.
			return fmt.Sprintf("no broker at %s; start one with narad dev, or pass --server", base)
		}
		return fmt.Sprintf("cannot reach %s; check --server or the context", base)
	}
	return ""
}

// certificateHint is what to do about a node certificate that failed verification,
// "" for any other error. --insecure is not offered: --ca-cert keeps the check.
func certificateHint(err error) string {
	var (
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &uerr):
		return "the node's certificate is signed by an authority this machine does not trust; pass --ca-cert FILE with that authority's certificate"
	case errors.As(err, &herr):
		return fmt.Sprintf("the node's certificate is not for %s; give --server a name it is for", render.Escape(herr.Host))
	case errors.As(err, &cerr) && cerr.Reason == x509.Expired:
		return "the node's certificate has expired or is not valid yet; the node needs a valid one"
	case errors.As(err, &cerr):
		return "the node's certificate chain is not valid; the node needs a valid one"
	}
	return ""
}

// nodeSaidWhy reports a refusal whose text names its reason (a grant, admin, what
// cannot be done: "user "app" lacks a create grant for topic "x"", not "forbidden"):
// a hint of ours would only say it again, or guess wrong.
func nodeSaidWhy(err error) bool {
	var e *client.Error
	if !errors.As(err, &e) {
		return false
	}
	msg := strings.ToLower(e.Message)
	return strings.Contains(msg, "grant") || strings.Contains(msg, "admin") || strings.Contains(msg, "cannot")
}

// missingGrant is the hint for a 403: what the user lacks for an operation.
func missingGrant(g client.Grant, topic string) string {
	on := ""
	if topic != "" {
		on = " for topic " + render.Escape(topic)
	}
	switch g {
	case client.GrantConsume, client.GrantProduce, client.GrantCreate:
		return fmt.Sprintf("the user has no %s grant%s", g, on)
	case client.GrantAnyOnTopic:
		if topic != "" {
			return "the user has no grant on topic " + render.Escape(topic)
		}
		return "the user has no grant on that topic"
	case client.GrantOwner:
		if topic != "" {
			return fmt.Sprintf("the user neither owns topic %s nor has the admin grant", render.Escape(topic))
		}
		return "the user neither owns the topic nor has the admin grant"
	case client.GrantAdmin:
		return "the user has no admin grant"
	}
	// GrantLogin and GrantNone: a 403 there is the node's own policy, not a grant to ask for.
	return "the node refused this user"
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

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

func produceHint(status, size int) string {
	switch {
	case status == http.StatusRequestEntityTooLarge:
		return "; a message is at most 1 MiB"
	case status == http.StatusBadRequest && size == 0:
		return "; a message needs at least one byte"
	}
	return ""
}

// statusText is a client error without its op prefix: "413 message too large".
func statusText(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return strings.TrimPrefix(e.Error(), e.Op.String()+": ")
	}
	return describeErr(err)
}
