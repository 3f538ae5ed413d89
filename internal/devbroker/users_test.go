package devbroker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type userObj struct {
	Username    string      `json:"username"`
	Grants      []grantJSON `json:"grants"`
	Root        bool        `json:"root"`
	CreatedAtMs int64       `json:"created_at_ms"`
	UpdatedAtMs int64       `json:"updated_at_ms"`
}

// startUsers is a broker with security on: root (the first admin, so the root admin),
// ops (another admin) and app.
func startUsers(t *testing.T, clock *fakeClock) *harness {
	h := start(t, Config{
		Now:    clock.Now,
		Topics: []TopicSpec{{Name: "orders"}},
		Users: []User{
			mustUser(t, "app:s3cret:consume:orders*,produce:orders"),
			mustUser(t, "root:toor:admin"),
			mustUser(t, "ops:pw:admin,consume:x"),
		},
	})
	h.user, h.pass = "root", "toor"
	return h
}

func (h *harness) json(method, path, body string) resp {
	h.t.Helper()
	return h.do(method, path, []byte(body), "Content-Type", "application/json")
}

func TestUsersCreateAndRead(t *testing.T) {
	clock := newFakeClock()
	h := startUsers(t, clock)
	ms := clock.Now().UnixMilli()
	r := h.json("POST", "/v1/users", `{"username":"billing-service","password":"example-only-7Kq2","grants":[`+
		`{"action":"produce","patterns":["invoices.*"]},{"action":"consume","patterns":["payments.*","orders"]}]}`)
	wantBody(t, r, 201, `{"username":"billing-service","grants":[{"action":"produce","patterns":["invoices.*"]},`+
		`{"action":"consume","patterns":["payments.*","orders"]}],"created_at_ms":`+itoa(ms)+`,"updated_at_ms":`+itoa(ms)+`}`+"\n")
	if strings.Contains(string(r.body), "example-only") {
		t.Fatal("the answer holds the password")
	}
	// The new user signs in at once, with what it was granted.
	h.user, h.pass = "app", "s3cret"
	h.mustProduce("orders", "", "m")
	h.user, h.pass = "billing-service", "example-only-7Kq2"
	one(t, h.consume("orders", ""))
	wantError(t, h.produce("orders", "", "m"), 403, `user "billing-service" lacks a produce grant for topic "orders"`)

	h.user, h.pass = "root", "toor"
	wantBody(t, h.do("GET", "/v1/users/app", nil), 200, `{"username":"app","grants":[{"action":"consume","patterns":["orders*"]},`+
		`{"action":"produce","patterns":["orders"]}],"created_at_ms":`+itoa(ms)+`,"updated_at_ms":`+itoa(ms)+`}`+"\n")
	r = h.do("GET", "/v1/users", nil)
	var users []userObj
	if r.status != 200 || json.Unmarshal(r.body, &users) != nil || len(users) != 4 {
		t.Fatalf("list: %v", r)
	}
	var names []string
	for _, u := range users {
		names = append(names, u.Username)
		if u.Root != (u.Username == "root") {
			t.Errorf("%s root=%v", u.Username, u.Root)
		}
	}
	if strings.Join(names, ",") != "app,billing-service,ops,root" {
		t.Fatalf("list order %v", names)
	}
	if strings.Contains(string(r.body), "s3cret") || strings.Contains(string(r.body), "password") {
		t.Fatalf("the list holds a password: %s", r.body)
	}
	// A user without grants has no grants field.
	wantBody(t, h.json("POST", "/v1/users", `{"username":"nobody","password":"x"}`), 201,
		`{"username":"nobody","created_at_ms":`+itoa(ms)+`,"updated_at_ms":`+itoa(ms)+`}`+"\n")
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestUsersCreateRefusals(t *testing.T) {
	h := startUsers(t, newFakeClock())
	long := strings.Repeat("p", 73)
	for body, want := range map[string]string{
		`{"username":"","password":"x"}`:                                                     `username "" must be 1 to 64 characters from A-Z a-z 0-9 . _ - and not "." or ".."`,
		`{"username":"..","password":"x"}`:                                                   `username ".." must be 1 to 64 characters from A-Z a-z 0-9 . _ - and not "." or ".."`,
		`{"username":"a:b","password":"x"}`:                                                  `username "a:b" must be 1 to 64 characters from A-Z a-z 0-9 . _ - and not "." or ".."`,
		`{"username":"` + strings.Repeat("u", 65) + `","password":"x"}`:                      `username "` + strings.Repeat("u", 65) + `" must be 1 to 64 characters from A-Z a-z 0-9 . _ - and not "." or ".."`,
		`{"username":"u","password":""}`:                                                     "password must be 1 to 72 bytes",
		`{"username":"u","password":"` + long + `"}`:                                         "password must be 1 to 72 bytes",
		`{"username":"u","password":"x","grants":[{"action":"read"}]}`:                       `grant action "read" must be produce, consume, create or admin`,
		`{"username":"u","password":"x","grants":[{"action":"consume"}]}`:                    "grant consume needs at least one pattern",
		`{"username":"u","password":"x","grants":[{"action":"consume","patterns":["a b"]}]}`: `grant pattern "a b" must be a topic name or a prefix ending in *`,
		`{"username":"u","password":"x","grants":[{"action":"admin","patterns":["a"]}]}`:     "grant admin takes no patterns",
		`{"username":"u","password":"x","role":"admin"}`:                                     `invalid json: json: unknown field "role"`,
	} {
		wantError(t, h.json("POST", "/v1/users", body), 400, want)
	}
	// 72 bytes is the longest password; a character outside ASCII counts its bytes.
	if r := h.json("POST", "/v1/users", `{"username":"u72","password":"`+long[:72]+`"}`); r.status != 201 {
		t.Fatalf("72-byte password: %v", r)
	}
	wantError(t, h.json("POST", "/v1/users", `{"username":"u","password":"`+strings.Repeat("é", 37)+`"}`), 400, "password must be 1 to 72 bytes")
	wantError(t, h.json("POST", "/v1/users", `{"username":"app","password":"x"}`), 409, `user "app" already exists`)
	wantError(t, h.json("POST", "/v1/users", strings.Repeat(" ", maxRequestBody+1)), 400, "request body over 1048576 bytes")

	// Only the root admin grants admin: another admin does not hold that right.
	h.user, h.pass = "ops", "pw"
	wantError(t, h.json("POST", "/v1/users", `{"username":"u2","password":"x","grants":[{"action":"admin"}]}`), 403,
		`user "ops" cannot grant admin: only the root admin can`)
	if r := h.json("POST", "/v1/users", `{"username":"u2","password":"x","grants":[{"action":"consume","patterns":["*"]}]}`); r.status != 201 {
		t.Fatalf("an admin creating a user: %v", r)
	}
	h.user, h.pass = "root", "toor"
	if r := h.json("POST", "/v1/users", `{"username":"admin2","password":"x","grants":[{"action":"admin"}]}`); r.status != 201 {
		t.Fatalf("root granting admin: %v", r)
	}
	// Not an admin: 403 on every route but one's own password; no credentials: 401.
	h.user, h.pass = "app", "s3cret"
	wantError(t, h.json("POST", "/v1/users", `{"username":"u3","password":"x"}`), 403, `user "app" lacks the admin grant`)
	wantError(t, h.do("GET", "/v1/users", nil), 403, `user "app" lacks the admin grant`)
	wantError(t, h.do("GET", "/v1/users/app", nil), 403, `user "app" lacks the admin grant`)
	wantError(t, h.json("PUT", "/v1/users/app/grants", `{"grants":[]}`), 403, `user "app" lacks the admin grant`)
	wantError(t, h.do("DELETE", "/v1/users/ops", nil), 403, `user "app" lacks the admin grant`)
	h.user = ""
	wantError(t, h.do("GET", "/v1/users", nil), 401, "authentication required")
	h.user, h.pass = "root", "toor"
	wantError(t, h.do("GET", "/v1/users/nope", nil), 404, `user "nope" not found`)
}

func TestUsersGrants(t *testing.T) {
	clock := newFakeClock()
	h := startUsers(t, clock)
	created := clock.Now().UnixMilli()
	clock.Advance(5 * time.Second)
	wantBody(t, h.json("PUT", "/v1/users/app/grants", `{"grants":[{"action":"produce","patterns":["invoices.*"]}]}`), 200,
		`{"username":"app","grants":[{"action":"produce","patterns":["invoices.*"]}],"created_at_ms":`+itoa(created)+
			`,"updated_at_ms":`+itoa(created+5000)+`}`+"\n")
	h.user, h.pass = "app", "s3cret"
	wantError(t, h.consume("orders", ""), 403, `user "app" lacks a consume grant for topic "orders"`)
	h.user, h.pass = "root", "toor"
	// An empty list removes every grant; a missing one is refused.
	wantBody(t, h.json("PUT", "/v1/users/app/grants", `{"grants":[]}`), 200,
		`{"username":"app","created_at_ms":`+itoa(created)+`,"updated_at_ms":`+itoa(created+5000)+`}`+"\n")
	wantError(t, h.json("PUT", "/v1/users/app/grants", `{}`), 400, "grants required (an empty list removes every grant)")
	wantError(t, h.json("PUT", "/v1/users/app/grants", `{"grants":[{"action":"x"}]}`), 400, `grant action "x" must be produce, consume, create or admin`)
	wantError(t, h.json("PUT", "/v1/users/nope/grants", `{"grants":[]}`), 404, `user "nope" not found`)
	wantError(t, h.json("PUT", "/v1/users/root/grants", `{"grants":[]}`), 403, `user "root" cannot change their own grants`)
	h.user, h.pass = "ops", "pw"
	wantError(t, h.json("PUT", "/v1/users/root/grants", `{"grants":[]}`), 403, `the grants of the root admin "root" cannot change`)
	wantError(t, h.json("PUT", "/v1/users/app/grants", `{"grants":[{"action":"admin"}]}`), 403, `user "ops" cannot grant admin: only the root admin can`)
	h.user, h.pass = "root", "toor"
	if r := h.json("PUT", "/v1/users/app/grants", `{"grants":[{"action":"admin"}]}`); r.status != 200 {
		t.Fatalf("root granting admin: %v", r)
	}
}

func TestUsersPassword(t *testing.T) {
	h := startUsers(t, newFakeClock())
	// An admin resets a password without the current one.
	wantEmpty(t, h.json("PUT", "/v1/users/app/password", `{"new_password":"n1"}`), 204)
	h.user, h.pass = "app", "s3cret"
	wantError(t, h.do("GET", "/v1/topics", nil), 401, "invalid user name or password")
	h.pass = "n1"
	// Users who are not admins change their own with the current one, and no one else's.
	wantError(t, h.json("PUT", "/v1/users/app/password", `{"new_password":"n2"}`), 403, "current_password required to change your own password")
	wantError(t, h.json("PUT", "/v1/users/app/password", `{"new_password":"n2","current_password":"wrong"}`), 403, "current_password is wrong")
	wantError(t, h.json("PUT", "/v1/users/ops/password", `{"new_password":"n2"}`), 403, `user "app" lacks the admin grant: users change only their own password`)
	wantEmpty(t, h.json("PUT", "/v1/users/app/password", `{"new_password":"n2","current_password":"n1"}`), 204)
	h.pass = "n2"
	if r := h.do("GET", "/v1/topics", nil); r.status != 200 {
		t.Fatalf("the new password: %v", r)
	}
	for body, want := range map[string]string{
		`{"new_password":""}`: "new_password: password must be 1 to 72 bytes",
		`{"new_password":"` + strings.Repeat("x", 73) + `","current_password":"n2"}`: "new_password: password must be 1 to 72 bytes",
		`{"password":"x"}`: `invalid json: json: unknown field "password"`,
	} {
		wantError(t, h.json("PUT", "/v1/users/app/password", body), 400, want)
	}
	// Only the root admin changes the root admin's password.
	h.user, h.pass = "ops", "pw"
	wantError(t, h.json("PUT", "/v1/users/root/password", `{"new_password":"x"}`), 403, `only the root admin can change the password of the root admin "root"`)
	wantError(t, h.json("PUT", "/v1/users/nope/password", `{"new_password":"x"}`), 404, `user "nope" not found`)
	h.user, h.pass = "root", "toor"
	wantEmpty(t, h.json("PUT", "/v1/users/root/password", `{"new_password":"toor2"}`), 204)
	h.pass = "toor2"
	if r := h.do("GET", "/v1/users", nil); r.status != 200 {
		t.Fatalf("root's new password: %v", r)
	}
}

func TestUsersDelete(t *testing.T) {
	h := startUsers(t, newFakeClock())
	wantError(t, h.do("DELETE", "/v1/users/root", nil), 403, `the root admin "root" cannot be deleted`)
	h.user, h.pass = "ops", "pw"
	wantError(t, h.do("DELETE", "/v1/users/ops", nil), 403, `user "ops" cannot delete themselves`)
	wantError(t, h.do("DELETE", "/v1/users/root", nil), 403, `the root admin "root" cannot be deleted`)
	wantEmpty(t, h.do("DELETE", "/v1/users/app", nil), 204)
	wantError(t, h.do("DELETE", "/v1/users/app", nil), 404, `user "app" not found`)
	h.user, h.pass = "app", "s3cret"
	wantError(t, h.do("GET", "/v1/topics", nil), 401, "invalid user name or password")
}

// With security off a real node has no user routes: its router answers 404 in plain
// text, which a client must tell from a JSON 404.
func TestUsersSecurityOff(t *testing.T) {
	h := start(t, Config{})
	for _, req := range []struct{ method, path string }{
		{"POST", "/v1/users"}, {"GET", "/v1/users"}, {"GET", "/v1/users/x"}, {"PUT", "/v1/users/x/grants"},
		{"PUT", "/v1/users/x/password"}, {"DELETE", "/v1/users/x"},
	} {
		r := h.json(req.method, req.path, `{}`)
		if r.status != 404 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || string(r.body) != "404 page not found\n" {
			t.Errorf("%s %s: %v %v", req.method, req.path, r, r.header)
		}
	}
}

// The root admin is the first --user with the admin grant; without one, no one is.
func TestUsersRoot(t *testing.T) {
	a, err := newAuthenticator([]User{mustUser(t, "a:p:consume:x"), mustUser(t, "b:p:admin"), mustUser(t, "c:p:admin")}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if a.users["a"].root || !a.users["b"].root || a.users["c"].root {
		t.Fatalf("roots: a=%v b=%v c=%v", a.users["a"].root, a.users["b"].root, a.users["c"].root)
	}
	a, _ = newAuthenticator([]User{mustUser(t, "a:p:consume:x")}, time.Now)
	if a.users["a"].root {
		t.Fatal("a user without admin is root")
	}
}
