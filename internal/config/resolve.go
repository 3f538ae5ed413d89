package config

import (
	"fmt"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

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
}

// ResolveEnv layers flag > env > context > default for each connection field, with
// the environment read through getenv so that a run can be given an environment of
// its own (narad demo talks to its own broker only). flags must define server, user,
// password, context, ca-cert and insecure. A fresh viper instance per call keeps
// invocations independent (tests run many).
func ResolveEnv(flags *pflag.FlagSet, f *File, getenv func(string) string) (Connection, error) {
	v := viper.New()
	for key, env := range map[string]string{
		"server": "NARAD_ADDR", "user": "NARAD_USER", "password": "NARAD_PASS", "context": "NARAD_CONTEXT",
	} {
		if fl := flags.Lookup(key); fl != nil {
			if err := v.BindPFlag(key, fl); err != nil {
				return Connection{}, err
			}
		}
		// viper's BindEnv would read os.Getenv itself. Its default layer ranks below
		// flags, as the environment must, and IsSet counts it: an empty variable is
		// left out, as BindEnv does.
		if s := getenv(env); s != "" {
			v.SetDefault(key, s)
		}
	}
	for _, key := range []string{"ca-cert", "insecure"} {
		if fl := flags.Lookup(key); fl != nil {
			if err := v.BindPFlag(key, fl); err != nil {
				return Connection{}, err
			}
		}
	}

	var conn Connection
	name := v.GetString("context")
	explicitContext := name != ""
	if name == "" {
		name = f.CurrentContext
	}
	var saved Context
	if name != "" {
		c, ok := f.Contexts[name]
		if !ok {
			if explicitContext {
				return Connection{}, fmt.Errorf("no context named %q (see narad context ls)", name)
			}
			return Connection{}, fmt.Errorf("current context %q is not in %s (run narad context use NAME)", name, f.Path())
		}
		saved, conn.Context = c, name
		saved.Server = NormalizeServer(saved.Server)
	}

	// A value is "explicit" when it came from a flag the user typed or from the
	// environment: viper's IsSet ignores flag defaults and empty variables. Only
	// explicit values outrank the context.
	explicit := v.IsSet

	savedServer := NormalizeServer(saved.Server)
	conn.Server = DefaultServer
	if savedServer != "" {
		conn.Server = savedServer
	}
	if explicit("server") {
		conn.Server = NormalizeServer(v.GetString("server"))
	}
	if err := ValidateServer(conn.Server); err != nil {
		return Connection{}, err
	}

	credsMayGo := savedServer != "" && SameOrigin(conn.Server, savedServer)
	// The saved password, read (from the keyring, maybe) only where it may go: to
	// the server it was saved for, for the user it was saved with.
	savedPass := func() (string, error) {
		pw, err := savedPassword(saved)
		if err != nil {
			return "", fmt.Errorf("context %q: %v", name, err)
		}
		return pw, nil
	}
	if explicit("user") {
		conn.User = v.GetString("user")
		if explicit("password") {
			conn.Password = v.GetString("password")
		} else if credsMayGo && conn.User == saved.User {
			pw, err := savedPass()
			if err != nil {
				return Connection{}, err
			}
			conn.Password = pw
		}
	} else {
		if explicit("password") {
			conn.Password = v.GetString("password")
		}
		if credsMayGo {
			conn.User = saved.User
			if !explicit("password") {
				pw, err := savedPass()
				if err != nil {
					return Connection{}, err
				}
				conn.Password = pw
			}
		} else if _, has := saved.HasPassword(); saved.User != "" || has {
			conn.DroppedCredentials = true
		}
	}

	if credsMayGo {
		conn.CACert, conn.Insecure = saved.CACert, saved.Insecure
	}
	if fl := flags.Lookup("ca-cert"); fl != nil && fl.Changed {
		conn.CACert = v.GetString("ca-cert")
	}
	if fl := flags.Lookup("insecure"); fl != nil && fl.Changed {
		conn.Insecure = v.GetBool("insecure")
	}
	return conn, nil
}
