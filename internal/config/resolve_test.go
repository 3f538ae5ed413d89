package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
)

// resolveFile has a current context with everything saved, one with a password in
// the keyring, and one with nothing but a scheme-less server.
func resolveFile() *File {
	return &File{
		CurrentContext: "prod",
		Contexts: map[string]Context{
			"prod": {Server: "https://narad.example.com", User: "app", Password: "ctxpass",
				CACert: "/etc/narad/ca.pem", Insecure: true},
			"kr":   {Server: "https://kr.example.com", User: "ci", PasswordStore: StoreKeyring},
			"bare": {Server: "127.0.0.1:7942"},
		},
		path: "/nonexistent/config.yaml",
	}
}

// TestResolveTable covers each field from each source it can come from, and the
// rule that a context's credentials go only to its own server.
func TestResolveTable(t *testing.T) {
	keyring.MockInit()
	t.Cleanup(func() { keyring.MockInitWithError(keyring.ErrUnsupportedPlatform) })
	if err := keyring.Set(keyringService("https://kr.example.com"), "ci", "krpass"); err != nil {
		t.Fatal(err)
	}
	str := func(v string) Flag[string] { return Flag[string]{Value: v, Set: true} }
	prod := Connection{Server: "https://narad.example.com", User: "app", Password: "ctxpass",
		CACert: "/etc/narad/ca.pem", Insecure: true, Context: "prod",
		From: Sources{Server: SourceContext, User: SourceContext, Password: SourceContext, Context: SourceCurrent,
			CACert: SourceContext, Insecure: SourceContext}}
	with := func(edit func(*Connection)) Connection {
		c := prod
		edit(&c)
		return c
	}
	// dropped is prod's context in use, its server from src naming another node.
	dropped := func(server string, src Source) Connection {
		return Connection{Server: server, Context: "prod", DroppedCredentials: true,
			From: Sources{Server: src, Context: SourceCurrent}}
	}
	cases := []struct {
		name  string
		flags Flags
		env   map[string]string
		file  *File
		want  Connection
	}{
		// Defaults: no context, nothing given.
		{name: "server: default", file: &File{Contexts: map[string]Context{}},
			want: Connection{Server: DefaultServer, From: Sources{Server: SourceDefault}}},
		// The context: every field.
		{name: "all fields: context", want: prod},
		// The server from each source.
		{name: "server: env beats context", env: map[string]string{"NARAD_ADDR": "https://narad.example.com:443"},
			want: with(func(c *Connection) { c.Server, c.From.Server = "https://narad.example.com:443", SourceEnv })},
		{name: "server: flag beats env", flags: Flags{Server: str("https://narad.example.com/")},
			env:  map[string]string{"NARAD_ADDR": "http://elsewhere:1"},
			want: with(func(c *Connection) { c.Server, c.From.Server = "https://narad.example.com/", SourceFlag })},
		// The user from each source.
		{name: "user: env beats context", env: map[string]string{"NARAD_USER": "envuser"},
			want: with(func(c *Connection) {
				c.User, c.From.User = "envuser", SourceEnv
				c.Password, c.From.Password = "", SourceNone // the saved password is app's only
			})},
		{name: "user: flag beats env", flags: Flags{User: str("flaguser")}, env: map[string]string{"NARAD_USER": "envuser"},
			want: with(func(c *Connection) {
				c.User, c.From.User = "flaguser", SourceFlag
				c.Password, c.From.Password = "", SourceNone
			})},
		{name: "user: the saved one given again keeps the saved password", flags: Flags{User: str("app")},
			want: with(func(c *Connection) { c.From.User = SourceFlag })},
		// The password from each source.
		{name: "password: env beats context", env: map[string]string{"NARAD_PASS": "envpass"},
			want: with(func(c *Connection) { c.Password, c.From.Password = "envpass", SourceEnv })},
		{name: "password: flag beats env", flags: Flags{Password: str("flagpass")}, env: map[string]string{"NARAD_PASS": "envpass"},
			want: with(func(c *Connection) { c.Password, c.From.Password = "flagpass", SourceFlag })},
		{name: "password: --password-stdin ranks as a flag", flags: Flags{Password: str("stdinpass"), PasswordStdin: true},
			env:  map[string]string{"NARAD_PASS": "envpass"},
			want: with(func(c *Connection) { c.Password, c.From.Password = "stdinpass", SourceStdin })},
		{name: "password: the keyring's for its own context", flags: Flags{Context: str("kr")},
			want: Connection{Server: "https://kr.example.com", User: "ci", Password: "krpass", Context: "kr",
				From: Sources{Server: SourceContext, User: SourceContext, Password: SourceContext, Context: SourceFlag}}},
		// The context name from each source.
		{name: "context: env beats current", env: map[string]string{"NARAD_CONTEXT": "bare"},
			want: Connection{Server: "http://127.0.0.1:7942", Context: "bare",
				From: Sources{Server: SourceContext, Context: SourceEnv}}},
		{name: "context: flag beats env", flags: Flags{Context: str("bare")}, env: map[string]string{"NARAD_CONTEXT": "kr"},
			want: Connection{Server: "http://127.0.0.1:7942", Context: "bare",
				From: Sources{Server: SourceContext, Context: SourceFlag}}},
		{name: "context: flag given empty is the current one", flags: Flags{Context: str("")},
			env: map[string]string{"NARAD_CONTEXT": "kr"}, want: prod},
		// TLS settings: flag or context (no environment).
		{name: "ca-cert and insecure: flag beats context",
			flags: Flags{CACert: str("/tmp/other.pem"), Insecure: Flag[bool]{Value: false, Set: true}},
			want: with(func(c *Connection) {
				c.CACert, c.From.CACert = "/tmp/other.pem", SourceFlag
				c.Insecure, c.From.Insecure = false, SourceFlag
			})},

		// The credential rule.
		{name: "rule: flag server elsewhere drops user, password and TLS settings",
			flags: Flags{Server: str("https://evil.example.com")},
			want:  dropped("https://evil.example.com", SourceFlag)},
		{name: "rule: env server elsewhere drops them", env: map[string]string{"NARAD_ADDR": "https://narad.example.com:8443"},
			want: dropped("https://narad.example.com:8443", SourceEnv)},
		{name: "rule: another scheme is elsewhere", flags: Flags{Server: str("http://narad.example.com")},
			want: dropped("http://narad.example.com", SourceFlag)},
		{name: "rule: host:port is http, so elsewhere than https", flags: Flags{Server: str("narad.example.com:443")},
			want: dropped("http://narad.example.com:443", SourceFlag)},
		{name: "rule: same server spelled otherwise keeps them", flags: Flags{Server: str("https://NARAD.example.com:443")},
			want: with(func(c *Connection) { c.Server, c.From.Server = "https://NARAD.example.com:443", SourceFlag })},
		{name: "rule: scheme-less host:port is the http context's own server",
			flags: Flags{Context: str("bare"), Server: str("127.0.0.1:7942")},
			file:  &File{Contexts: map[string]Context{"bare": {Server: "http://127.0.0.1:7942", User: "u", Password: "p"}}},
			want: Connection{Server: "http://127.0.0.1:7942", User: "u", Password: "p", Context: "bare",
				From: Sources{Server: SourceFlag, User: SourceContext, Password: SourceContext, Context: SourceFlag}}},
		{name: "rule: elsewhere never reads the keyring", flags: Flags{Context: str("kr"), Server: str("https://evil.example.com")},
			want: Connection{Server: "https://evil.example.com", Context: "kr", DroppedCredentials: true,
				From: Sources{Server: SourceFlag, Context: SourceFlag}}},
		{name: "rule: elsewhere, given credentials still go", flags: Flags{Server: str("https://evil.example.com"),
			User: str("me"), Password: str("mine")},
			want: Connection{Server: "https://evil.example.com", User: "me", Password: "mine", Context: "prod",
				From: Sources{Server: SourceFlag, User: SourceFlag, Password: SourceFlag, Context: SourceCurrent}}},
		{name: "rule: elsewhere, the saved user's name given gets no saved password",
			flags: Flags{Server: str("https://evil.example.com"), User: str("app")},
			want: Connection{Server: "https://evil.example.com", User: "app", Context: "prod",
				From: Sources{Server: SourceFlag, User: SourceFlag, Context: SourceCurrent}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.file
			if f == nil {
				f = resolveFile()
			}
			got, err := Resolve(tc.flags, f, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			// SelectContext names the context Resolve used, from the same source.
			if name, src := SelectContext(tc.flags, f, func(k string) string { return tc.env[k] }); name != got.Context || src != got.From.Context {
				t.Errorf("SelectContext = %q from %q; Resolve used %q from %q", name, src, got.Context, got.From.Context)
			}
		})
	}
}

// A context whose keyring password is gone is an error when the password would be
// sent, and nothing at all when it would not.
func TestResolveKeyringMissing(t *testing.T) {
	keyring.MockInit()
	t.Cleanup(func() { keyring.MockInitWithError(keyring.ErrUnsupportedPlatform) })
	getenv := func(string) string { return "" }
	if _, err := Resolve(Flags{Context: Flag[string]{Value: "kr", Set: true}}, resolveFile(), getenv); err == nil {
		t.Error("want an error for a keyring password that is not there")
	}
	fl := Flags{Context: Flag[string]{Value: "kr", Set: true}, Server: Flag[string]{Value: "https://evil.example.com", Set: true}}
	if _, err := Resolve(fl, resolveFile(), getenv); err != nil {
		t.Errorf("elsewhere: %v, want no keyring read", err)
	}
}

// Describe resolves as Resolve does but never reads a saved password: it says only
// whether one would be sent (context show must not touch the keyring).
func TestDescribeReadsNoPassword(t *testing.T) {
	keyring.MockInit() // empty: Resolve would fail to find kr's password
	t.Cleanup(func() { keyring.MockInitWithError(keyring.ErrUnsupportedPlatform) })
	getenv := func(string) string { return "" }
	for _, tc := range []struct {
		flags Flags
		want  Connection
	}{
		{Flags{Context: Flag[string]{Value: "kr", Set: true}},
			Connection{Server: "https://kr.example.com", User: "ci", Context: "kr",
				From: Sources{Server: SourceContext, User: SourceContext, Password: SourceContext, Context: SourceFlag}}},
		{Flags{},
			Connection{Server: "https://narad.example.com", User: "app", CACert: "/etc/narad/ca.pem", Insecure: true, Context: "prod",
				From: Sources{Server: SourceContext, User: SourceContext, Password: SourceContext, Context: SourceCurrent,
					CACert: SourceContext, Insecure: SourceContext}}},
	} {
		got, err := Describe(tc.flags, resolveFile(), getenv)
		if err != nil || got != tc.want {
			t.Errorf("Describe(%+v) = %+v, %v\nwant %+v", tc.flags, got, err, tc.want)
		}
	}
}

// A context without a server (a hand-edited file) is an error when it would name the
// server, not a quiet fall back to the default node; a server from a flag or the
// environment still goes.
func TestResolveContextWithoutServer(t *testing.T) {
	f := &File{CurrentContext: "bare", Contexts: map[string]Context{"bare": {User: "u", Password: "p"}}}
	none := func(string) string { return "" }
	if c, err := Resolve(Flags{}, f, none); err == nil || !strings.Contains(err.Error(), `context "bare" has no server (save one with narad context add bare --server URL --force)`) {
		t.Errorf("Resolve = %+v, %v; want the context's missing server said", c, err)
	}
	c, err := Resolve(Flags{Server: Flag[string]{Value: "http://127.0.0.1:1", Set: true}}, f, none)
	if err != nil || c.Server != "http://127.0.0.1:1" || c.User != "" || c.Password != "" {
		t.Errorf("with --server: %+v, %v; want that server, no credentials", c, err)
	}
	env := func(k string) string {
		if k == "NARAD_ADDR" {
			return "http://127.0.0.1:2"
		}
		return ""
	}
	if c, err := Resolve(Flags{}, f, env); err != nil || c.Server != "http://127.0.0.1:2" {
		t.Errorf("with NARAD_ADDR: %+v, %v", c, err)
	}
}

// A user name with a colon would sign in as the name before it (Basic auth ends the
// user there) with the rest taken for the password: refused from a flag, the
// environment or a saved context, as is one with a control character.
func TestResolveRefusesAUserBasicAuthCannotCarry(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		name  string
		flags Flags
		env   func(string) string
		file  *File
		want  string
	}{
		{"flag", Flags{User: Flag[string]{Value: "ops:team", Set: true}}, none, &File{},
			`invalid user "ops:team" (a Basic auth user name ends at the first ':', so the node would read user "ops")`},
		{"env", Flags{}, func(k string) string {
			if k == "NARAD_USER" {
				return "a:b"
			}
			return ""
		}, &File{}, `invalid user "a:b"`},
		{"context", Flags{}, none, &File{CurrentContext: "c", Contexts: map[string]Context{"c": {Server: "https://x", User: "a:b"}}},
			`invalid user "a:b"`},
		{"control character", Flags{User: Flag[string]{Value: "a\tb", Set: true}}, none, &File{},
			`invalid user "a\tb" (a user name holds no control characters)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := Resolve(tc.flags, tc.file, tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Resolve = %+v, %v; want %s", c, err, tc.want)
			}
		})
	}
	if _, err := Resolve(Flags{User: Flag[string]{Value: "ops@example.com", Set: true}}, &File{}, none); err != nil {
		t.Errorf("a plain user name: %v", err)
	}
}

// A keyring that cannot be read is said with what to do instead, on its one line.
func TestResolveKeyringUnreadableSaysWhatToDo(t *testing.T) {
	keyring.MockInitWithError(errors.New("exec: \"dbus-launch\": executable file not found in $PATH"))
	t.Cleanup(func() { keyring.MockInitWithError(keyring.ErrUnsupportedPlatform) })
	_, err := Resolve(Flags{Context: Flag[string]{Value: "kr", Set: true}}, resolveFile(), func(string) string { return "" })
	want := `context "kr": cannot read its password from the system keyring: exec: "dbus-launch": executable file not found in $PATH ` +
		`(give it with NARAD_PASS or --password-stdin, or save the context again with context add --force --insecure-storage, which keeps it in the config file)`
	if err == nil || err.Error() != want {
		t.Errorf("Resolve: %v\nwant %s", err, want)
	}
}
