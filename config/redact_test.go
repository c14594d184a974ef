package config

import (
	"strings"
	"testing"
)

func TestRedactHidesEveryPassword(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://me:hunter2@db:5432/x", "postgres://me:xxxxx@db:5432/x"},
		{"postgres://me@db/x?sslmode=disable&password=hunter2", "postgres://me@db/x?sslmode=disable&password=xxxxx"},
		{"postgres://db/x?password=hunter2&application_name=a&sslpassword=k3y", "postgres://db/x?password=xxxxx&application_name=a&sslpassword=xxxxx"},
		{"postgres://me:a@db/x?pass%77ord=b", "postgres://me:xxxxx@db/x?pass%77ord=xxxxx"},
		{"postgres:///x?host=/tmp/socket&port=5432", "postgres:///x?host=/tmp/socket&port=5432"},
		{"postgres://me@db/x", "postgres://me@db/x"},
		{"postgres://me:%zz@db", "the database URL"},
	} {
		got := Redact(c.in)
		if got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, secret := range []string{"hunter2", "k3y"} {
			if strings.Contains(got, secret) {
				t.Errorf("Redact(%q) shows %q", c.in, secret)
			}
		}
	}
}

func TestWithoutPasswordLeavesThemOut(t *testing.T) {
	for _, c := range []struct {
		in, want string
		had      bool
	}{
		{"postgres://me:hunter2@db/x?sslmode=disable", "postgres://me@db/x?sslmode=disable", true},
		{"postgres://me@db/x?sslmode=disable&password=hunter2&sslpassword=k3y&port=5", "postgres://me@db/x?sslmode=disable&port=5", true},
		{"postgres://me@db/x?port=5", "postgres://me@db/x?port=5", false},
	} {
		got, had, err := WithoutPassword(c.in)
		if err != nil || got != c.want || had != c.had {
			t.Errorf("WithoutPassword(%q) = %q, %v, %v; want %q, %v", c.in, got, had, err, c.want, c.had)
		}
	}
	if _, _, err := WithoutPassword("postgres://me:%zz@db"); err == nil {
		t.Error("a URL that does not parse is taken")
	}
}
