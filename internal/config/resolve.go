package config

import (
	"fmt"

	"github.com/spf13/viper"
)

// Flag is what one command-line flag said. Set is whether it was given at all: a
// flag given empty (--user "") is still given, and outranks the environment.
type Flag[T any] struct {
	Value T
	Set   bool
}

// Flags are the connection flags of one invocation, as plain values: the resolver
// knows nothing of the flag library that parsed them.
type Flags struct {
	Server, User, Password, Context, CACert Flag[string]
	Insecure                                Flag[bool]
	// PasswordStdin says Password was read from stdin (--password-stdin): it ranks
	// as a flag, and its source says so.
	PasswordStdin bool
}

// Source is where a resolved field came from.
type Source string

const (
	// SourceNone: nothing gave the field; it is empty.
	SourceNone Source = ""
	// SourceFlag: a command-line flag.
	SourceFlag Source = "flag"
	// SourceStdin: the first line of stdin (--password-stdin), a flag in rank.
	SourceStdin Source = "stdin"
	// SourceEnv: the environment (NARAD_ADDR, NARAD_USER, NARAD_PASS, NARAD_CONTEXT).
	SourceEnv Source = "env"
	// SourceContext: the saved context in use.
	SourceContext Source = "context"
	// SourceCurrent: the config file's current-context (the context name only).
	SourceCurrent Source = "current-context"
	// SourceDefault: the built-in default (the server only).
	SourceDefault Source = "default"
)

// Sources says, field by field, where a Connection's values came from.
type Sources struct {
	Server, User, Password, Context, CACert, Insecure Source
}

// Connection is the resolved way to reach a node.
type Connection struct {
	Server   string
	User     string
	Password string
	CACert   string
	Insecure bool
	// Context is the saved context in use, "" when none.
	Context string
	// DroppedCredentials is set when a context's credentials were withheld because the
	// server in use is not the one they were saved for.
	DroppedCredentials bool
	// From is where each field came from.
	From Sources
}

// envOf names the variable each layered key is read from.
var envOf = map[string]string{
	"server": "NARAD_ADDR", "user": "NARAD_USER", "password": "NARAD_PASS", "context": "NARAD_CONTEXT",
}

// layers is flag > env for the keys the environment can give, held in viper: the
// given flags in its override layer, the non-empty variables in its default layer
// (viper's own BindEnv would read os.Getenv; the environment is read through getenv
// so that a run can be given one of its own, as narad demo is). A fresh instance per
// call keeps invocations independent (tests run many).
type layers struct {
	v    *viper.Viper
	flag map[string]bool
}

func newLayers(fl Flags, getenv func(string) string) layers {
	l := layers{v: viper.New(), flag: map[string]bool{}}
	for key, given := range map[string]Flag[string]{
		"server": fl.Server, "user": fl.User, "password": fl.Password, "context": fl.Context,
	} {
		if given.Set {
			l.v.Set(key, given.Value)
			l.flag[key] = true
		}
		// An empty variable is left out, as BindEnv does.
		if s := getenv(envOf[key]); s != "" {
			l.v.SetDefault(key, s)
		}
	}
	return l
}

// get is key's value from a flag or the environment, and which; ok is false when
// neither gave it, and then the context or the default decides.
func (l layers) get(key string) (value string, src Source, ok bool) {
	if !l.v.IsSet(key) {
		return "", SourceNone, false
	}
	src = SourceEnv
	if l.flag[key] {
		src = SourceFlag
	}
	return l.v.GetString(key), src, true
}

// SelectContext is the name of the context in use and where it was named: --context,
// else NARAD_CONTEXT, else the config file's current context; "" when none. It does
// not check that the context exists (Resolve does; context show says it its own way).
func SelectContext(fl Flags, f *File, getenv func(string) string) (string, Source) {
	return newLayers(fl, getenv).context(f)
}

func (l layers) context(f *File) (string, Source) {
	if name, src, ok := l.get("context"); ok && name != "" {
		return name, src
	}
	if f.CurrentContext != "" {
		return f.CurrentContext, SourceCurrent
	}
	return "", SourceNone
}

// Resolve layers flag > env > context > default for each connection field, and
// enforces the rule that a context's credentials (its user, its password, wherever
// that is kept, and its TLS settings) go only to the server they were saved for: a
// server from a flag or the environment that is not that one drops them. The saved
// password is read (from the system keyring, maybe) only when it may be sent.
func Resolve(fl Flags, f *File, getenv func(string) string) (Connection, error) {
	return resolve(fl, f, getenv, true)
}

// Describe is Resolve without reading any saved password: Password stays empty and
// From.Password is SourceContext when the saved one would be sent. narad context
// show asks it, as it must not touch the keyring to say where things come from.
func Describe(fl Flags, f *File, getenv func(string) string) (Connection, error) {
	return resolve(fl, f, getenv, false)
}

func resolve(fl Flags, f *File, getenv func(string) string, readPassword bool) (Connection, error) {
	r := resolution{l: newLayers(fl, getenv), fl: fl, readPassword: readPassword}
	if err := r.useContext(f); err != nil {
		return Connection{}, err
	}
	if err := r.server(); err != nil {
		return Connection{}, err
	}
	r.credsMayGo = r.saved.Server != "" && SameOrigin(r.conn.Server, r.saved.Server)
	if err := r.credentials(); err != nil {
		return Connection{}, err
	}
	if err := ValidateUser(r.conn.User); err != nil {
		return Connection{}, err
	}
	r.tls()
	return r.conn, nil
}

// resolution is one Resolve on its way: the layers, the context in use, and the
// Connection filled in field by field.
type resolution struct {
	l            layers
	fl           Flags
	readPassword bool
	saved        Context // the context in use, its server normalized; zero when none
	// credsMayGo: the server in use is the one the context was saved for, so its
	// credentials and TLS settings may go to it.
	credsMayGo bool
	conn       Connection
}

// useContext finds the context in use, which must exist once named.
func (r *resolution) useContext(f *File) error {
	name, from := r.l.context(f)
	if name == "" {
		return nil
	}
	c, ok := f.Contexts[name]
	if !ok {
		if from != SourceCurrent {
			return fmt.Errorf("no context named %q (see narad context ls)", name)
		}
		return fmt.Errorf("current context %q is not in %s (run narad context use NAME)", name, f.Path())
	}
	r.saved, r.conn.Context, r.conn.From.Context = c, name, from
	r.saved.Server = NormalizeServer(r.saved.Server)
	return nil
}

// server is flag > env > context > default, and must be a server URL.
func (r *resolution) server() error {
	r.conn.Server, r.conn.From.Server = DefaultServer, SourceDefault
	if r.saved.Server != "" {
		r.conn.Server, r.conn.From.Server = r.saved.Server, SourceContext
	}
	if s, src, ok := r.l.get("server"); ok {
		r.conn.Server, r.conn.From.Server = NormalizeServer(s), src
	} else if r.conn.Context != "" && r.saved.Server == "" {
		// A hand-edited context without one: the default would be a node it never
		// named, and its credentials could not go there anyway.
		return fmt.Errorf("context %q has no server (save one with narad context add %s --server URL --force)",
			r.conn.Context, r.conn.Context)
	}
	return ValidateServer(r.conn.Server)
}

// credentials are the user and password: a flag or the environment first; the
// context's only when they may go to this server, and its password only with its user.
func (r *resolution) credentials() error {
	user, userFrom, userGiven := r.l.get("user")
	pass, passFrom, passGiven := r.l.get("password")
	if passGiven && r.fl.PasswordStdin && passFrom == SourceFlag {
		passFrom = SourceStdin
	}
	if passGiven {
		r.conn.Password, r.conn.From.Password = pass, passFrom
	}
	switch {
	case userGiven:
		r.conn.User, r.conn.From.User = user, userFrom
		// The saved password, only for the user it was saved with.
		if !passGiven && r.credsMayGo && user == r.saved.User {
			return r.savedPassword()
		}
	case r.credsMayGo:
		r.conn.User, r.conn.From.User = r.saved.User, contextSource(r.saved.User)
		if !passGiven {
			return r.savedPassword()
		}
	default:
		if _, has := r.saved.HasPassword(); r.saved.User != "" || has {
			r.conn.DroppedCredentials = true
		}
	}
	return nil
}

// savedPassword takes the context's password, or for Describe only says it would.
func (r *resolution) savedPassword() error {
	if !r.readPassword {
		if _, has := r.saved.HasPassword(); has {
			r.conn.From.Password = SourceContext
		}
		return nil
	}
	pw, err := savedPassword(r.saved)
	if err != nil {
		return fmt.Errorf("context %q: %v", r.conn.Context, err)
	}
	r.conn.Password, r.conn.From.Password = pw, contextSource(pw)
	return nil
}

// tls is the CA file and --insecure: the flags, else the context's when its
// credentials may go to this server.
func (r *resolution) tls() {
	if r.credsMayGo {
		r.conn.CACert, r.conn.From.CACert = r.saved.CACert, contextSource(r.saved.CACert)
		r.conn.Insecure = r.saved.Insecure
		if r.saved.Insecure {
			r.conn.From.Insecure = SourceContext
		}
	}
	if r.fl.CACert.Set {
		r.conn.CACert, r.conn.From.CACert = r.fl.CACert.Value, SourceFlag
	}
	if r.fl.Insecure.Set {
		r.conn.Insecure, r.conn.From.Insecure = r.fl.Insecure.Value, SourceFlag
	}
}

// contextSource is where a value taken from the context came from: nowhere when the
// context has none.
func contextSource(v string) Source {
	if v == "" {
		return SourceNone
	}
	return SourceContext
}
