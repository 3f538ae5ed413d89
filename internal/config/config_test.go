package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newFlags is Flags as a command line of --name value pairs would give them.
func newFlags(t *testing.T, args ...string) Flags {
	t.Helper()
	var fl Flags
	for i := 0; i < len(args); i++ {
		name := strings.TrimPrefix(args[i], "--")
		if name == "insecure" {
			fl.Insecure = Flag[bool]{Value: true, Set: true}
			continue
		}
		if i+1 == len(args) {
			t.Fatalf("%s needs a value", args[i])
		}
		i++
		v := Flag[string]{Value: args[i], Set: true}
		switch name {
		case "server":
			fl.Server = v
		case "user":
			fl.User = v
		case "password":
			fl.Password = v
		case "context":
			fl.Context = v
		case "ca-cert":
			fl.CACert = v
		default:
			t.Fatalf("unknown flag %s", args[i-1])
		}
	}
	return fl
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"NARAD_ADDR", "NARAD_USER", "NARAD_PASS", "NARAD_CONTEXT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func testFile() *File {
	return &File{
		CurrentContext: "prod",
		Contexts: map[string]Context{
			"prod":  {Server: "https://narad.example.com", User: "app", Password: "s3cret"},
			"local": {Server: "http://127.0.0.1:7942"},
		},
		path: "/nonexistent/config.yaml",
	}
}

func TestResolveLayering(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		want    Connection
		wantErr bool
	}{
		{name: "default without contexts", want: Connection{Server: DefaultServer}},
		{name: "current context", args: nil,
			want: Connection{Server: "https://narad.example.com", User: "app", Password: "s3cret", Context: "prod"}},
		{name: "--server elsewhere drops the context's credentials", args: []string{"--server", "http://evil.example.com"},
			want: Connection{Server: "http://evil.example.com", Context: "prod", DroppedCredentials: true}},
		{name: "NARAD_ADDR elsewhere drops them too", env: map[string]string{"NARAD_ADDR": "https://narad.example.com:8443"},
			want: Connection{Server: "https://narad.example.com:8443", Context: "prod", DroppedCredentials: true}},
		{name: "same origin spelled differently keeps them", args: []string{"--server", "https://NARAD.example.com:443/"},
			want: Connection{Server: "https://NARAD.example.com:443/", User: "app", Password: "s3cret", Context: "prod"}},
		{name: "flag beats env beats context", env: map[string]string{"NARAD_USER": "envuser", "NARAD_PASS": "envpass"},
			args: []string{"--user", "flaguser"},
			want: Connection{Server: "https://narad.example.com", User: "flaguser", Password: "envpass", Context: "prod"}},
		{name: "another user does not get the saved password", args: []string{"--user", "other"},
			want: Connection{Server: "https://narad.example.com", User: "other", Context: "prod"}},
		{name: "--context picks another", args: []string{"--context", "local"},
			want: Connection{Server: "http://127.0.0.1:7942", Context: "local"}},
		{name: "NARAD_CONTEXT picks another", env: map[string]string{"NARAD_CONTEXT": "local"},
			want: Connection{Server: "http://127.0.0.1:7942", Context: "local"}},
		{name: "host:port without a scheme is http", args: []string{"--server", "localhost:7942"},
			want: Connection{Server: "http://localhost:7942", Context: "prod", DroppedCredentials: true}},
		{name: "NARAD_ADDR without a scheme too, same origin as the context", env: map[string]string{"NARAD_ADDR": "127.0.0.1:7942"},
			args: []string{"--context", "local"}, want: Connection{Server: "http://127.0.0.1:7942", Context: "local"}},
		{name: "unknown context", args: []string{"--context", "nope"}, wantErr: true},
		{name: "bad server", args: []string{"--server", "ftp://x"}, wantErr: true},
		{name: "empty port", args: []string{"--server", "http://127.0.0.1:"}, wantErr: true},
		{name: "credentials in the URL refused", args: []string{"--server", "http://u:p@host"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			f := testFile()
			if tc.name == "default without contexts" {
				f = &File{Contexts: map[string]Context{}}
			}
			got, err := Resolve(newFlags(t, tc.args...), f, os.Getenv)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.From = (Sources{}); got != tc.want { // the values; TestResolveTable checks the sources
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSaveIsPrivateAndRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// An existing world-readable file must end up 0600 too.
	if err := os.WriteFile(path, []byte("contexts: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Contexts["Prod"] = Context{Server: "https://x", User: "u", Password: "p"}
	f.CurrentContext = "Prod"
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.CurrentContext != "Prod" || g.Contexts["Prod"].Password != "p" {
		t.Errorf("round trip lost data (context names must keep their case): %+v", g)
	}
}

// A config kept with the dotfiles is a symlink: a save writes the file it names,
// 0600 and by a rename in that file's own directory, and the link stays a link.
func TestSaveWritesThroughSymlink(t *testing.T) {
	for _, tc := range []struct {
		name string
		// link makes the link(s) at home/config.yaml to dots/config.yaml.
		link     func(t *testing.T, home, dots string) string
		existing bool
	}{
		{"absolute", func(t *testing.T, home, dots string) string {
			return filepath.Join(dots, "config.yaml")
		}, true},
		{"relative", func(t *testing.T, home, dots string) string {
			return filepath.Join("..", "dots", "config.yaml")
		}, true},
		{"chain", func(t *testing.T, home, dots string) string {
			mid := filepath.Join(home, "mid.yaml")
			if err := os.Symlink(filepath.Join(dots, "config.yaml"), mid); err != nil {
				t.Fatal(err)
			}
			return "mid.yaml"
		}, true},
		{"dangling", func(t *testing.T, home, dots string) string {
			return filepath.Join(dots, "config.yaml")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			home, dots := filepath.Join(root, "home"), filepath.Join(root, "dots")
			for _, d := range []string{home, dots} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			target := filepath.Join(dots, "config.yaml")
			if tc.existing {
				if err := os.WriteFile(target, []byte("contexts: {}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(home, "config.yaml")
			to := tc.link(t, home, dots)
			if err := os.Symlink(to, path); err != nil {
				t.Fatal(err)
			}
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			f.Contexts["prod"] = Context{Server: "https://x", User: "u", Password: "p"}
			if err := f.Save(); err != nil {
				t.Fatal(err)
			}
			if got, err := os.Readlink(path); err != nil || got != to {
				t.Fatalf("the link is now %q (%v), want it left pointing to %q", got, err, to)
			}
			st, err := os.Stat(target)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("target mode %v, want 0600", st.Mode().Perm())
			}
			g, err := Load(target)
			if err != nil || g.Contexts["prod"].Password != "p" {
				t.Errorf("the target does not hold the save: %+v, %v", g, err)
			}
			for _, d := range []string{home, dots} {
				if left, _ := filepath.Glob(filepath.Join(d, ".config-*")); len(left) != 0 {
					t.Errorf("temporary files left: %v", left)
				}
			}
		})
	}
}

func TestSaveRefusesASymlinkLoop(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	f := &File{path: a, Contexts: map[string]Context{}}
	if err := f.Save(); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Fatalf("Save through a loop: %v, want an error saying so", err)
	}
	if fi, err := os.Lstat(a); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
}

// A field narad does not know (a typo in a hand-edited file) is warned about with its
// line, not dropped without a word; a file of known fields has no warning.
func TestLoadWarnsOfUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	body := "current-context: a\ncontexts:\n  a:\n    server: https://x\n    user: u\n    passwrd: p\n    ca_cert: /ca.pem\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Contexts["a"].User != "u" {
		t.Errorf("the known fields were not read: %+v", f.Contexts["a"])
	}
	w := f.UnknownFieldsWarning()
	if !strings.Contains(w, "has fields narad does not know, ignored: line 6: passwrd, line 7: ca_cert (a typo?") {
		t.Errorf("warning %q", w)
	}
	f.Contexts["b"] = Context{Server: "https://y"}
	if err := f.Save(); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := g.UnknownFieldsWarning(); w != "" {
		t.Errorf("a file narad wrote: warning %q", w)
	}
}

func TestLoadMissingAndInvalid(t *testing.T) {
	dir := t.TempDir()
	f, err := Load(filepath.Join(dir, "missing.yaml"))
	if err != nil || len(f.Contexts) != 0 {
		t.Fatalf("missing file: %v %+v", err, f)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("contexts: [\n"), 0o600)
	if _, err := Load(bad); err == nil {
		t.Fatal("want an error for invalid YAML")
	}
}

func TestDefaultPath(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}
	p, _ := DefaultPath(func(k string) string { return env[k] })
	if p != "/x/narad/config.yaml" {
		t.Errorf("got %s", p)
	}
	delete(env, "XDG_CONFIG_HOME")
	p, _ = DefaultPath(func(k string) string { return env[k] })
	if p != "/h/.config/narad/config.yaml" {
		t.Errorf("got %s", p)
	}
}

func TestValidateServer(t *testing.T) {
	for _, s := range []string{"http://127.0.0.1:7942", "https://narad.example.com", "http://[::1]:80", "http://h:65535/prefix"} {
		if err := ValidateServer(s); err != nil {
			t.Errorf("ValidateServer(%q) = %v, want ok", s, err)
		}
	}
	// A port that cannot be dialled is bad input, refused before any request; so is a
	// query or fragment, which the client refuses (context add saved one, and every
	// command after it failed).
	for _, s := range []string{"http://h:99999", "http://h:0", "http://h:65536", "http://h:1/?a=b", "http://h:1#x", "http://h:1?",
		"http://h:1/\u009b", "http://h\u202e:1", "http://h:1/\u200b", "http://h:1/\xff"} {
		if err := ValidateServer(s); err == nil {
			t.Errorf("ValidateServer(%q) = nil, want an error", s)
		}
	}
	// A URL with credentials never comes back with them, parsed or not.
	// A colon or slash short, "u:SECRET@" lands in the path, where a request would
	// carry it (to a host named "http"): refused as well, and not shown.
	for _, s := range []string{"http://u:SECRET@h:1", "http://u:SECRET@h:1/%zz", "http://u:SE CRET@h:1", "http://u:SECRET@[::1",
		"http://http//u:SECRET@h:1", "http://127.0.0.1:1//u:SECRET@h", "http://http:/u:SECRET@h:1", "https://h/u:SECRET@x"} {
		err := ValidateServer(s)
		if err == nil {
			t.Errorf("ValidateServer(%q) = nil, want an error", s)
			continue
		}
		if strings.Contains(err.Error(), "SE") {
			t.Errorf("ValidateServer(%q) = %q: shows the password", s, err)
		}
	}
}

// Resolve reads the environment only through getenv, so a caller (narad demo)
// can give a run an environment of its own.
func TestResolveUsesGetenv(t *testing.T) {
	clearEnv(t)
	t.Setenv("NARAD_CONTEXT", "nope")
	t.Setenv("NARAD_USER", "osuser")
	env := map[string]string{"NARAD_PASS": "envpass", "NARAD_ADDR": "https://narad.example.com"}
	got, err := Resolve(newFlags(t), testFile(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Connection{Server: "https://narad.example.com", User: "app", Password: "envpass", Context: "prod"}
	if got.From = (Sources{}); got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// A flag still beats what getenv gives.
	got, err = Resolve(newFlags(t, "--password", "flagpass"), testFile(), func(k string) string { return env[k] })
	if err != nil || got.Password != "flagpass" {
		t.Errorf("got %+v, %v; want the flag's password", got, err)
	}
}

func TestValidateContextName(t *testing.T) {
	for _, n := range []string{"prod", "eu-west.1", "dev_2", "prüfung"} {
		if err := ValidateContextName(n); err != nil {
			t.Errorf("ValidateContextName(%q) = %v, want ok", n, err)
		}
	}
	// What the message promises is what is checked: no controls, quotes or globs
	// in a name that is shown in tables and typed in shells.
	for _, n := range []string{"", "a b", "a/b", "a:b", "a\x1b[2J", "a\u009b", "a*", "a\"b", "a\xff"} {
		if err := ValidateContextName(n); err == nil {
			t.Errorf("ValidateContextName(%q) = nil, want an error", n)
		}
	}
}

func TestNormalizeServer(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:7942":        "http://localhost:7942",
		"127.0.0.1:7942":        "http://127.0.0.1:7942",
		"narad.example.com":     "http://narad.example.com:7942",
		"10.0.0.5":              "http://10.0.0.5:7942",
		"[::1]":                 "http://[::1]:7942",
		"[::1]:7000":            "http://[::1]:7000",
		"proxy.example/narad":   "http://proxy.example/narad",
		"http://narad.example":  "http://narad.example",
		"https://narad.example": "https://narad.example",
		"http://127.0.0.1:1":    "http://127.0.0.1:1",
		"":                      "",
	} {
		if got := NormalizeServer(in); got != want {
			t.Errorf("NormalizeServer(%q) = %q, want %q", in, got, want)
		}
	}
}

// `-s host:port` means http://host:port (CLI.md), from a flag, the environment or a
// hand-written context, and a context's credentials still go to its own server.
func TestServerWithoutScheme(t *testing.T) {
	clearEnv(t)
	f := &File{Contexts: map[string]Context{"lab": {Server: "127.0.0.1:7942", User: "app", Password: "pw"}}}
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want Connection
	}{
		{[]string{"--server", "127.0.0.1:7942"}, nil, Connection{Server: "http://127.0.0.1:7942"}},
		{[]string{"--server", "localhost:7942"}, nil, Connection{Server: "http://localhost:7942"}},
		{nil, map[string]string{"NARAD_ADDR": "[::1]:7942"}, Connection{Server: "http://[::1]:7942"}},
		{[]string{"--context", "lab"}, nil, Connection{Server: "http://127.0.0.1:7942", User: "app", Password: "pw", Context: "lab"}},
		{[]string{"--context", "lab", "--server", "http://127.0.0.1:7942"}, nil,
			Connection{Server: "http://127.0.0.1:7942", User: "app", Password: "pw", Context: "lab"}},
	} {
		got, err := Resolve(newFlags(t, tt.args...), f, func(k string) string { return tt.env[k] })
		got.From = Sources{}
		if err != nil || got != tt.want {
			t.Errorf("%v %v: got %+v, %v; want %+v", tt.args, tt.env, got, err, tt.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:PW@h:1":         "http://xxxxx@h:1",
		"https://u:PW@h/p":        "https://xxxxx@h/p",
		"u:PW@h:2":                "xxxxx@h:2", // http://u:PW@h:2, as -s host:port reads
		"u:PW@":                   "xxxxx@",
		"http://u:P%zzW@h:1":      "http://xxxxx@h:1", // does not parse
		"http://h:1":              "http://h:1",
		"h:1":                     "h:1",
		"http://127.0.0.1:7942/x": "http://127.0.0.1:7942/x",
		// A slash short (or one too many): what reads as the user and password is in
		// the path or the host, where url.Parse finds no userinfo to hide.
		"http://http:/u:PW@h:1": "http://http:/xxxxx@h:1", // -s http:/u:PW@h:1, normalized
		"http:/u:PW@h:1":        "http:/xxxxx@h:1",
		"http:////u:PW@h:1":     "http:////xxxxx@h:1",
		"http://u:P/W@h:1":      "http://xxxxx@h:1", // a '/' in the password
		"http://u:PW@h:1/v:Q@x": "http://xxxxx@x",   // an '@' later on: hidden up to it
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
