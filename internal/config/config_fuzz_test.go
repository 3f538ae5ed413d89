package config

import (
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fuzz targets of what the config file and the user hand in: the YAML file, and
// server URLs. scripts/fuzz.sh runs every target.

// FuzzLoad reads any file as the config: an error is one line that names the file and
// shows no password; a file that loads is saved and loaded again unchanged.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"current-context: prod\ncontexts:\n  prod:\n    server: https://narad.example.com\n    user: app\n    password: s3cret\n    ca-cert: /etc/ca.pem\n    insecure: true\n",
		"contexts:\n  a: {server: \"http://127.0.0.1:7942\"}\n  b:\n    server: 127.0.0.1:1\n",
		"contexts: []\n", "contexts:\n  a: 5\n", "current-context: [\n", "\t- x", "---\n...\n", "",
		"contexts:\n  \"\\e[2J\": {server: \"http://x\", password: \"p\\u202e\"}\n",
		"a: &a [*a]\n", "x: !!binary gIGC\n", "contexts:\n  a:\n    insecure: maybe\n",
		"current-context: x\ncontexts:\n  x:\n    password: hunter2-secret\n    user: [1, 2]\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := os.CreateTemp(dir, "in-*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(in.Name())
		in.Write(data)
		in.Close()
		cfg, err := Load(in.Name())
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error spans lines: %q", msg)
			}
			if !strings.Contains(msg, in.Name()) {
				t.Fatalf("error does not name the file: %q", msg)
			}
			if strings.Contains(msg, "hunter2-secret") {
				t.Fatalf("error shows a password: %q", msg)
			}
			return
		}
		out := filepath.Join(dir, filepath.Base(in.Name())+".saved")
		defer os.Remove(out)
		cfg.path = out
		if err := cfg.Save(); err != nil {
			t.Fatalf("a config that loads does not save: %v", err)
		}
		back, err := Load(out)
		if err != nil {
			t.Fatalf("a saved config does not load: %v", err)
		}
		if back.CurrentContext != cfg.CurrentContext || !reflect.DeepEqual(back.Contexts, cfg.Contexts) {
			t.Fatalf("saved and loaded again it changed:\n%#v\n%#v", cfg, back)
		}
		if w := back.PermissionWarning(); w != "" {
			t.Fatalf("a file narad saved is warned about: %s", w)
		}
	})
}

// FuzzServerURL: whatever the user gives as a server, checking it never panics nor
// shows a password, and the cleartext decision holds to its rule.
func FuzzServerURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:7942", "https://narad.example.com", "127.0.0.1:7942", "http://[::1]:1",
		"http://u:SECRET@h:1/%zz", "http://h:99999", "ftp://x", "http://localhost.", "http://[fe80::1%25en0]:1", "", "://", "http://:80"} {
		f.Add(s, "SECRET")
	}
	f.Fuzz(func(t *testing.T, s, pass string) {
		norm := NormalizeServer(s)
		if err := ValidateServer(norm); err == nil {
			u, perr := url.Parse(norm)
			if perr != nil {
				t.Fatalf("valid server %q does not parse: %v", norm, perr)
			}
			if !SameOrigin(norm, norm) {
				t.Fatalf("%q is not its own origin", norm)
			}
			clear := CleartextCredentials(norm)
			loopback := isLoopbackHost(u.Hostname())
			if want := u.Scheme == "http" && !loopback; clear != want {
				t.Fatalf("CleartextCredentials(%q) = %v, want %v", norm, clear, want)
			}
		}
		// A password in the URL is never shown back, parsed or not. It starts with a
		// marker no escaping of the rest can produce.
		pass = "SECRET-" + pass
		if strings.ContainsAny(pass, "@/?#%:[]") || strings.Contains(s, "SECRET-") {
			return
		}
		withPass := "http://user:" + pass + "@" + strings.TrimPrefix(s, "http://")
		if strings.Contains(RedactURL(withPass), "SECRET-") {
			t.Fatalf("RedactURL(%q) = %q shows the password", withPass, RedactURL(withPass))
		}
		if err := ValidateServer(withPass); err == nil || strings.Contains(err.Error(), "SECRET-") {
			t.Fatalf("ValidateServer(%q) = %v", withPass, err)
		}
	})
}
