package agent

import (
	"encoding/json"
	"testing"
)

// The steering tools' arguments: whatever a model sends is either refused
// with a reason or decoded into an id of bounded length and a timeout in
// range.
func FuzzTaskToolArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"task_id":"call_1"}`, `{"task_id":"t1","timeout_seconds":30}`,
		`{"timeout_seconds":-1}`, `{"timeout_seconds":1e9}`, `{"task_id":7}`, `{"extra":1}`, `[]`, ``, `{"task_id":"  t  "}`} {
		f.Add([]byte(s))
	}
	wait := steeringTools[1]
	f.Fuzz(func(t *testing.T, raw []byte) {
		var args taskToolArgs
		err := decodeTaskToolArgs(wait.schema, json.RawMessage(raw), &args)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a reason")
			}
			return
		}
		if len(args.TaskID) > 200 {
			t.Errorf("task id of %d bytes accepted", len(args.TaskID))
		}
		if s := args.TimeoutSeconds; s != nil && (*s < 0 || *s > MaxTaskWait.Seconds()) {
			t.Errorf("timeout %v accepted", *s)
		}
	})
}

// Out-of-range and mistyped arguments are refused, good ones decoded.
func TestTaskToolArgs(t *testing.T) {
	wait := steeringTools[1]
	for raw, ok := range map[string]bool{`{}`: true, `{"task_id":"t1","timeout_seconds":5}`: true,
		`{"timeout_seconds":-1}`: false, `{"timeout_seconds":99999}`: false, `{"task_id":3}`: false, `{"other":1}`: false} {
		var args taskToolArgs
		err := decodeTaskToolArgs(wait.schema, json.RawMessage(raw), &args)
		if (err == nil) != ok {
			t.Errorf("%s: error %v, want ok %v", raw, err, ok)
		}
	}
}
