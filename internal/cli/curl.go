package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/narad/narad/internal/client"
	"github.com/narad/narad/internal/config"
	"github.com/narad/narad/internal/render"
)

// curlInlineMax is the largest body --curl writes into the command line; a larger
// one, or one that is not printable text, is read from stdin (--data-binary @-).
const curlInlineMax = 1024

// curlPrinter is --curl: before each request, the curl command line that makes the
// same request, for an operator to hand to anyone (Narad's own docs are curl-first).
type curlPrinter struct{ out *stderrLines }

func (p curlPrinter) OnRequest(e client.RequestEvent) { p.out.println(curlCommand(e)) }

// curlCommand is e as one shell-safe line: every part single-quoted, credentials as
// "$NARAD_USER:$NARAD_PASS" for the shell to fill in, never the password itself,
// and the body inline only when it is printable text (no byte that could steer a
// terminal reaches stderr).
func curlCommand(e client.RequestEvent) string {
	var b strings.Builder
	b.WriteString("curl -i")
	if e.Method != "GET" {
		b.WriteString(" -X " + e.Method)
	}
	b.WriteString(" " + shellQuote(e.URL))
	names := make([]string, 0, len(e.Header))
	for k := range e.Header {
		// curl sends its own User-Agent; the node makes nothing of ours.
		if k != "User-Agent" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range e.Header[k] {
			b.WriteString(" -H " + shellQuote(k+": "+v))
		}
	}
	if e.Auth {
		b.WriteString(` -u "$NARAD_USER:$NARAD_PASS"`)
	}
	switch {
	case e.Secret:
		// Not even a placeholder inline: pasted as it is, it would set that password.
		b.WriteString(" --data-binary @-  # the body on stdin: it holds a password, not shown")
	case e.Body == nil:
	case len(e.Body) <= curlInlineMax && printableText(e.Body):
		b.WriteString(" --data-binary " + shellQuote(string(e.Body)))
	default:
		what := "binary"
		if utf8.Valid(e.Body) {
			what = "text with control characters"
		}
		if len(e.Body) > curlInlineMax {
			what = "too long to show"
		}
		fmt.Fprintf(&b, " --data-binary @-  # the body on stdin: %s (%s)", plural(int64(len(e.Body)), "byte"), what)
	}
	return b.String()
}

// printableText is valid UTF-8 without control or format characters (newlines and
// bidi controls included), which is what can sit inside a one-line command.
func printableText(p []byte) bool {
	if !utf8.Valid(p) {
		return false
	}
	for _, r := range string(p) {
		if r != ' ' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// shellQuote single-quotes s for a POSIX shell: nothing inside is expanded, and a
// quote in s is closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// noteCurlCredentials says once, for --curl, whose credentials this run sends and
// where they came from when that is not the environment the printed commands read
// ($NARAD_USER, $NARAD_PASS): pasted as they are, they would go as someone else, or
// as nobody. The password itself is never shown.
func (f *Factory) noteCurlCredentials(conn config.Connection) {
	if f.curlNoted || conn.User == "" {
		return
	}
	f.curlNoted = true
	from := func(flag string, src config.Source) string {
		switch src {
		case config.SourceStdin:
			return "--password-stdin"
		case config.SourceFlag:
			return "--" + flag
		case config.SourceEnv:
			return ""
		case config.SourceContext:
			return "context " + conn.Context
		}
		return "the server URL"
	}
	user, pass := from("user", conn.From.User), ""
	if conn.Password != "" {
		pass = from("password", conn.From.Password)
	}
	if user == "" && pass == "" {
		return // both from the environment: the commands read them as they are
	}
	where := "user " + strconv.Quote(conn.User)
	switch {
	case user != "" && (pass == user || pass == ""):
		where += " from " + user
	case user != "":
		where += " from " + user + ", its password from " + pass
	default:
		where += ", its password from " + pass
	}
	f.runEnv().notice(render.Escape(fmt.Sprintf("narad: --curl: this run sends %s; the commands read "+
		`"$NARAD_USER:$NARAD_PASS": set NARAD_USER and NARAD_PASS before pasting them`, where)))
}
