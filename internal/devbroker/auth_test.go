package devbroker

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustUser(t *testing.T, s string) User {
	t.Helper()
	u, err := ParseUser(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func startAuth(t *testing.T) *harness {
	return start(t, Config{
		Topics: []TopicSpec{{Name: "orders"}, {Name: "orders-eu"}, {Name: "payments"}},
		Users: []User{
			mustUser(t, "app:s3cret:consume:orders*,produce:orders"),
			mustUser(t, "maker:pw:create:tmp-*"),
			mustUser(t, "root:toor:admin"),
		},
	})
}

// Point 8: off by default on loopback.
func TestAuthOffByDefault(t *testing.T) {
	h := startTopic(t, TopicSpec{})
	h.user, h.pass = "anyone", "whatever" // credentials are ignored when auth is off
	h.mustProduce("orders", "", "m")
	one(t, h.consume("orders", ""))
	wantEmpty(t, h.do("DELETE", "/v1/topics/orders", nil), 204)
}

// Point 8: 401 without or with bad credentials, with a Basic challenge.
func TestAuthUnauthorized(t *testing.T) {
	h := startAuth(t)
	r := h.produce("orders", "", "m")
	wantError(t, r, 401, "authentication required")
	if r.header.Get("WWW-Authenticate") != `Basic realm="narad"` {
		t.Fatalf("challenge %q", r.header.Get("WWW-Authenticate"))
	}
	h.user, h.pass = "app", "wrong"
	wantError(t, h.consume("orders", ""), 401, "invalid user name or password")
	h.user, h.pass = "nobody", "s3cret"
	wantError(t, h.do("GET", "/v1/topics", nil), 401, "invalid user name or password")
	if n := h.stats("orders").Messages(); n != 0 {
		t.Fatal("an unauthenticated produce stored a message")
	}
	// Health needs no credentials.
	h.user = ""
	wantBody(t, h.do("GET", "/healthz", nil), 200, `{"status":"ok"}`+"\n")
}

// Point 8: grants decide, per action and topic pattern; missing ones are 403.
func TestAuthGrants(t *testing.T) {
	h := startAuth(t)
	h.user, h.pass = "app", "s3cret"
	h.mustProduce("orders", "", "m")
	wantError(t, h.produce("orders-eu", "", "m"), 403, `user "app" lacks a produce grant for topic "orders-eu"`)
	m := one(t, h.consume("orders", ""))
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, "true"), 204) // a consume grant covers extend...
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, "0"), 204)    // ...nack...
	m = one(t, h.consume("orders", ""))
	wantEmpty(t, h.ack("orders", m.ReceiptHandle, ""), 204) // ...and ack
	wantEmpty(t, h.consume("orders-eu", ""), 204)           // orders* matches
	one(t, h.consume("orders", "partition=0&offset=0"))     // and replay
	wantError(t, h.consume("payments", ""), 403, `user "app" lacks a consume grant for topic "payments"`)
	wantError(t, h.ack("payments", "0:0:1", ""), 403, `user "app" lacks a consume grant for topic "payments"`)
	// Topic info is readable with a consume-only grant; list with any user, and it
	// holds only the topics the caller could read.
	if r := h.do("GET", "/v1/topics/orders-eu", nil); r.status != 200 || !strings.Contains(string(r.body), "partition_stats") {
		t.Fatalf("info: %v", r)
	}
	wantError(t, h.do("GET", "/v1/topics/payments", nil), 403, `user "app" lacks a grant for topic "payments"`)
	if r := h.do("GET", "/v1/topics", nil); r.status != 200 || strings.Contains(string(r.body), `"payments"`) ||
		!strings.Contains(string(r.body), `"orders-eu"`) {
		t.Fatalf("list: %v", r)
	}
	// Create needs a create grant on the name; delete needs admin or ownership.
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"orders-new"}`)), 403, `user "app" lacks a create grant for topic "orders-new"`)
	wantError(t, h.do("DELETE", "/v1/topics/orders", nil), 403, `user "app" lacks the admin grant and does not own topic "orders"`)
	// A grant is checked before existence: no probing for topic names.
	wantError(t, h.consume("secret", ""), 403, `user "app" lacks a consume grant for topic "secret"`)
	wantError(t, h.consume("orders-gone", ""), 404, `topic "orders-gone" not found`)

	h.user, h.pass = "maker", "pw"
	if r := h.do("POST", "/v1/topics", []byte(`{"name":"tmp-1"}`)); r.status != 201 {
		t.Fatalf("create with grant: %v", r)
	}
	if r := h.do("GET", "/v1/topics/tmp-1", nil); r.status != 200 {
		t.Fatalf("info with a create grant: %v", r)
	}
	wantError(t, h.do("POST", "/v1/topics", []byte(`{"name":"prod"}`)), 403, `user "maker" lacks a create grant for topic "prod"`)
	wantError(t, h.produce("tmp-1", "", "m"), 403, `user "maker" lacks a produce grant for topic "tmp-1"`)

	h.user, h.pass = "root", "toor"
	h.mustProduce("payments", "", "m")
	one(t, h.consume("payments", ""))
	wantEmpty(t, h.do("DELETE", "/v1/topics/tmp-1", nil), 204)
	if r := h.do("POST", "/v1/topics", []byte(`{"name":"anything"}`)); r.status != 201 {
		t.Fatalf("admin create: %v", r)
	}
}

// A real node answers 429 after 5 failed logins for a name and gives an attempt back
// every 12 s, so a client never loops on 401.
func TestAuthFailedLoginLimit(t *testing.T) {
	clock := newFakeClock()
	h := start(t, Config{
		Now:    clock.Now,
		Topics: []TopicSpec{{Name: "orders"}},
		Users:  []User{mustUser(t, "app:s3cret:consume:orders*"), mustUser(t, "root:toor:admin")},
	})
	h.user, h.pass = "app", "wrong"
	for i := 0; i < 5; i++ {
		wantError(t, h.consume("orders", ""), 401, "invalid user name or password")
	}
	locked := h.consume("orders", "")
	wantError(t, locked, 429, `too many failed logins for user "app": try again later`)
	// As API.md says of a 429: Retry-After tells when to come back.
	if ra := locked.header.Get("Retry-After"); ra != "12" {
		t.Errorf("Retry-After %q right after the lockout, want 12", ra)
	}
	h.pass = "s3cret"
	wantError(t, h.consume("orders", ""), 429, `too many failed logins for user "app": try again later`)
	// Another name is not affected.
	h.user, h.pass = "root", "toor"
	wantEmpty(t, h.consume("orders", ""), 204)
	// An attempt comes back every 12 s, on the broker's clock.
	h.user, h.pass = "app", "s3cret"
	clock.Advance(12*time.Second - time.Millisecond)
	locked = h.consume("orders", "")
	wantError(t, locked, 429, `too many failed logins for user "app": try again later`)
	if ra := locked.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q a millisecond before an attempt is back, want 1", ra)
	}
	clock.Advance(time.Millisecond)
	wantEmpty(t, h.consume("orders", ""), 204)
	h.pass = "wrong"
	wantError(t, h.consume("orders", ""), 401, "invalid user name or password")
	wantError(t, h.consume("orders", ""), 429, `too many failed logins for user "app": try again later`)
	if loginRefill != 12*time.Second || loginBurst != 5 {
		t.Fatal("a real node allows 5 failures and one more every 12s")
	}
}

// Point 8: a non-loopback address without users is refused; with users it is fine.
func TestAuthNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":7942", "192.168.1.5:7942", "[::]:0", "example.com:80"} {
		_, err := New(Config{Addr: addr})
		if err == nil || !strings.Contains(err.Error(), "--user") || !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%q) without users: %v", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0", "[::1]:0", "127.0.0.2:7942"} {
		if _, err := New(Config{Addr: addr}); err != nil {
			t.Errorf("New(%q): %v", addr, err)
		}
	}
	if _, err := New(Config{Addr: "nonsense"}); err == nil {
		t.Error("an address without a port was accepted")
	}
	b, err := Start(Config{Addr: "0.0.0.0:0", Users: []User{mustUser(t, "a:b:admin")}})
	if err != nil {
		t.Fatalf("non-loopback with users: %v", err)
	}
	b.Close()
}

func TestParseUser(t *testing.T) {
	for in, want := range map[string]User{
		"app:s3cret:consume:orders*,produce:orders": {Name: "app", Password: "s3cret", Grants: []Grant{
			{Action: "consume", Patterns: []string{"orders*"}}, {Action: "produce", Patterns: []string{"orders"}}}},
		"root:toor:admin":           {Name: "root", Password: "toor", Grants: []Grant{{Action: "admin"}}},
		"c:p:create:*,consume:a.b":  {Name: "c", Password: "p", Grants: []Grant{{Action: "create", Patterns: []string{"*"}}, {Action: "consume", Patterns: []string{"a.b"}}}},
		"u:p@ss=1:produce:orders-*": {Name: "u", Password: "p@ss=1", Grants: []Grant{{Action: "produce", Patterns: []string{"orders-*"}}}},
	} {
		got, err := ParseUser(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseUser(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "app", "app:pw", "app:pw:", ":pw:admin", "app::admin", "app:pw:read:x",
		"app:pw:consume", "app:pw:consume:", "app:pw:consume:a*b", "app:pw:admin:x", "app:pw:consume:a,,b"} {
		_, err := ParseUser(in)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseUser(%q): want an error, got %v", in, err)
			continue
		}
		if strings.Contains(err.Error(), ":pw:") {
			t.Errorf("ParseUser(%q) error shows the password: %v", in, err)
		}
	}
	if _, err := New(Config{Users: []User{{Name: "a", Password: "b"}, {Name: "a", Password: "c"}}}); err == nil {
		t.Error("duplicate users accepted")
	}
	if _, err := New(Config{Users: []User{{Name: "a", Password: "b", Grants: []Grant{{Action: "read", Patterns: []string{"x"}}}}}}); err == nil {
		t.Error("unknown grant action accepted")
	}
}
