package todos_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deepagents-go/deepagents/todos"
)

// Whatever the model sends, Decode never panics, accepts only valid lists,
// and a list it accepts reads back the same after it is saved as state.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(three))
	f.Add([]byte(`{"todos":[]}`))
	f.Add([]byte(`{"todos":[{"content":"a","status":"pending","activeForm":"Doing a"}]}`))
	f.Add([]byte(`{"todos":[{"content":"a\nb","status":"completed"}],"x":1}`))
	f.Add([]byte(`{"todos":null}`))
	f.Fuzz(func(t *testing.T, args []byte) {
		items, err := todos.Decode(args)
		if err != nil {
			if items != nil {
				t.Fatalf("items %v with error %v", items, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		if len(items) > todos.MaxItems {
			t.Fatalf("%d items accepted", len(items))
		}
		for _, it := range items {
			if strings.TrimSpace(it.Content) == "" || utf8.RuneCountInString(it.Content) > todos.MaxContent ||
				utf8.RuneCountInString(it.ActiveForm) > todos.MaxContent {
				t.Fatalf("bad item accepted: %+v", it)
			}
			switch it.Status {
			case todos.Pending, todos.InProgress, todos.Completed:
			default:
				t.Fatalf("bad status accepted: %q", it.Status)
			}
		}
		if n := strings.Count(todos.Lines(items), "\n"); len(items) > 0 && n != len(items)-1 {
			t.Fatalf("%d items rendered on %d lines", len(items), n+1)
		}
		raw, err := json.Marshal(map[string]any{"todos": items})
		if err != nil {
			t.Fatal(err)
		}
		again, err := todos.Decode(raw)
		if err != nil {
			t.Fatalf("re-encoded list refused: %v\n%s", err, raw)
		}
		if len(items) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(items, again) {
			t.Fatalf("round trip changed the list:\n%+v\n%+v", items, again)
		}
	})
}
