package cli

import (
	"strings"
	"testing"

	"github.com/narad/narad/internal/devbroker"
)

// --curl says once whose credentials the run sends and where they came from, when
// the printed commands' $NARAD_USER/$NARAD_PASS would not carry them; never the
// password; nothing when they came from the environment.
func TestCurlSaysWhereTheCredentialsCameFrom(t *testing.T) {
	b, err := devbroker.Start(devbroker.Config{Addr: "127.0.0.1:0",
		Topics: []devbroker.TopicSpec{{Name: "orders", Partitions: 3}},
		Users:  []devbroker.User{mustUser(t, "app:s3cretpw:consume:orders,produce:orders")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e := newCompleteEnv(t, "")
	if r := e.run("context", "add", "prod", "--server", b.URL(), "--user", "app", "--password", "s3cretpw"); r.code != 0 {
		t.Fatalf("context add: %d %s", r.code, r.stderr)
	}
	const tail = `; the commands read "$NARAD_USER:$NARAD_PASS": set NARAD_USER and NARAD_PASS before pasting them`
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		note string
	}{
		{"context", nil, nil, `this run sends user "app" from context prod` + tail},
		{"flags", nil, []string{"-s", b.URL(), "-u", "app", "-p", "s3cretpw"}, `this run sends user "app" from --user, its password from --password` + tail},
		{"user flag, password from the environment", map[string]string{"NARAD_PASS": "s3cretpw"}, []string{"-s", b.URL(), "-u", "app"},
			`this run sends user "app" from --user` + tail},
		{"environment", map[string]string{"NARAD_USER": "app", "NARAD_PASS": "s3cretpw"}, []string{"-s", b.URL()}, ""},
	} {
		for k, v := range tc.env {
			e.env[k] = v
		}
		r := e.run(append([]string{"--curl", "topic", "ls", "--context", "prod"}, tc.args...)...)
		for k := range tc.env {
			delete(e.env, k)
		}
		flat := strings.Join(strings.Fields(r.stderr), " ")
		if r.code != 0 || strings.Contains(r.stderr, "s3cretpw") {
			t.Errorf("%s: exit %d, stderr %q", tc.name, r.code, r.stderr)
		}
		if tc.note == "" && strings.Contains(r.stderr, "this run sends") {
			t.Errorf("%s: a note where the environment has them: %q", tc.name, r.stderr)
		}
		if tc.note != "" && (!strings.Contains(flat, "narad: --curl: "+tc.note) || strings.Count(r.stderr, "this run sends") != 1) {
			t.Errorf("%s: stderr %q\nwant the note once: %q", tc.name, r.stderr, tc.note)
		}
	}
}
