package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/narad/narad/internal/devbroker"
	"github.com/narad/narad/internal/iostreams"
)

// The prompts of user add and user passwd at a terminal say whose password is asked
// and which one (current, new, the retyped new one), in the lower case of the other
// prompts (context add's "password for app (empty for none): "); two passwords typed
// differently change nothing and say so, exit 2 (input refused before any request).
func TestUserPasswordPrompts(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Users: []devbroker.User{
		{Name: "admin", Password: "s3cret", Grants: []devbroker.Grant{{Action: "admin"}}},
		{Name: "bob", Password: "bob-pass-1", Grants: []devbroker.Grant{{Action: "consume", Patterns: []string{"t"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(user, pass string, typed []string, args ...string) (cliResult, []string) {
		var prompts []string
		ios, _, out, errOut := iostreams.Test()
		ios.SetTTY(true, false, false)
		env := map[string]string{"NARAD_CONFIG": t.TempDir() + "/c.yaml", "NARAD_ADDR": b.URL(), "NARAD_USER": user, "NARAD_PASS": pass}
		f := &Factory{IO: ios, Getenv: func(k string) string { return env[k] }, Now: time.Now, Signals: NewSignals(),
			ReadSecret: func(p string) (string, error) {
				prompts = append(prompts, p)
				s := typed[0]
				typed = typed[1:]
				return s, nil
			}}
		code := Run(f, args)
		return cliResult{code, out.String(), errOut.String()}, prompts
	}
	signsIn := func(user, pass string) bool {
		req, _ := http.NewRequest("GET", b.URL()+"/v1/topics", nil)
		req.SetBasicAuth(user, pass)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode != http.StatusUnauthorized
	}
	for _, tc := range []struct {
		name       string
		user, pass string
		typed      []string
		args       []string
		code       int
		prompts    []string
		stderr     string
		signInAs   [2]string
	}{
		{"add", "admin", "s3cret", []string{"ci-pass-1", "ci-pass-1"}, []string{"user", "add", "ci", "--grant", "produce:t"}, 0,
			[]string{"password for the new user ci: ", "retype the password for ci: "}, "added user ci", [2]string{"ci", "ci-pass-1"}},
		{"passwd by an admin", "admin", "s3cret", []string{"bob-pass-2", "bob-pass-2"}, []string{"user", "passwd", "bob"}, 0,
			[]string{"new password for bob: ", "retype the new password for bob: "}, "changed the password of bob", [2]string{"bob", "bob-pass-2"}},
		{"passwd of one's own", "bob", "bob-pass-2", []string{"bob-pass-2", "bob-pass-3", "bob-pass-3"}, []string{"user", "passwd", "bob", "--current"}, 0,
			[]string{"current password for bob: ", "new password for bob: ", "retype the new password for bob: "}, "changed the password of bob", [2]string{"bob", "bob-pass-3"}},
		{"a mismatch", "admin", "s3cret", []string{"bob-pass-4", "bob-pass-5"}, []string{"user", "passwd", "bob"}, ExitUsage,
			[]string{"new password for bob: ", "retype the new password for bob: "},
			"narad: the two passwords typed differ; nothing changed (type the same password twice)\n", [2]string{"bob", "bob-pass-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, prompts := run(tc.user, tc.pass, tc.typed, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.stderr)
			}
			if strings.Join(prompts, "|") != strings.Join(tc.prompts, "|") {
				t.Errorf("prompts %q, want %q", prompts, tc.prompts)
			}
			if !signsIn(tc.signInAs[0], tc.signInAs[1]) {
				t.Errorf("%s cannot sign in with %s", tc.signInAs[0], tc.signInAs[1])
			}
		})
	}
}
