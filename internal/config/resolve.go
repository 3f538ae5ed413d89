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
	l := newLayers(fl, getenv)
	var conn Connection

	name, nameFrom := l.context(f)
	var saved Context
	if name != "" {
		c, ok := f.Contexts[name]
		if !ok {
			if nameFrom != SourceCurrent {
				return Connection{}, fmt.Errorf("no context named %q (see narad context ls)", name)
			}
			return Connection{}, fmt.Errorf("current context %q is not in %s (run narad context use NAME)", name, f.Path())
		}
		saved, conn.Context, conn.From.Context = c, name, nameFrom
		saved.Server = NormalizeServer(saved.Server)
	}

	conn.Server, conn.From.Server = DefaultServer, SourceDefault
	if saved.Server != "" {
		conn.Server, conn.From.Server = saved.Server, SourceContext
	}
	if s, src, ok := l.get("server"); ok {
		conn.Server, conn.From.Server = NormalizeServer(s), src
	}
	if err := ValidateServer(conn.Server); err != nil {
		return Connection{}, err
	}

	credsMayGo := saved.Server != "" && SameOrigin(conn.Server, saved.Server)
	fromContext := func(v string) Source {
		if v == "" {
			return SourceNone
		}
		return SourceContext
	}
	savedPass := func() error {
		if !readPassword {
			if _, has := saved.HasPassword(); has {
				conn.From.Password = SourceContext
			}
			return nil
		}
		pw, err := savedPassword(saved)
		if err != nil {
			return fmt.Errorf("context %q: %v", name, err)
		}
		conn.Password, conn.From.Password = pw, fromContext(pw)
		return nil
	}

	user, userFrom, userGiven := l.get("user")
	pass, passFrom, passGiven := l.get("password")
	if passGiven && fl.PasswordStdin && passFrom == SourceFlag {
		passFrom = SourceStdin
	}
	if passGiven {
		conn.Password, conn.From.Password = pass, passFrom
	}
	switch {
	case userGiven:
		conn.User, conn.From.User = user, userFrom
		// The saved password, only for the user it was saved with.
		if !passGiven && credsMayGo && user == saved.User {
			if err := savedPass(); err != nil {
				return Connection{}, err
			}
		}
	case credsMayGo:
		conn.User, conn.From.User = saved.User, fromContext(saved.User)
		if !passGiven {
			if err := savedPass(); err != nil {
				return Connection{}, err
			}
		}
	default:
		if _, has := saved.HasPassword(); saved.User != "" || has {
			conn.DroppedCredentials = true
		}
	}

	if credsMayGo {
		conn.CACert, conn.From.CACert = saved.CACert, fromContext(saved.CACert)
		conn.Insecure = saved.Insecure
		if saved.Insecure {
			conn.From.Insecure = SourceContext
		}
	}
	if fl.CACert.Set {
		conn.CACert, conn.From.CACert = fl.CACert.Value, SourceFlag
	}
	if fl.Insecure.Set {
		conn.Insecure, conn.From.Insecure = fl.Insecure.Value, SourceFlag
	}
	return conn, nil
}
