package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
)

// maxBody caps request bodies.
const maxBody = 8 << 20

func (s *Server) routes() {
	ok := func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]bool{"ok": true}) }
	for _, rt := range []struct {
		pattern string
		h       http.HandlerFunc
	}{
		{"GET /ok", ok},
		{"GET /info", s.info},
		{"GET /openapi.json", s.openAPI},
		{"POST /assistants/search", s.searchAssistants},
		{"GET /assistants/{id}", s.getAssistant},
		{"POST /threads", s.createThread},
		{"POST /threads/search", s.searchThreads},
		{"GET /threads/{thread}", s.getThread},
		{"PATCH /threads/{thread}", s.patchThread},
		{"DELETE /threads/{thread}", s.deleteThread},
		{"GET /threads/{thread}/state", s.getState},
		{"GET /threads/{thread}/state/{checkpoint}", s.getState},
		{"POST /threads/{thread}/state", s.updateState},
		{"GET /threads/{thread}/history", s.history},
		{"POST /threads/{thread}/history", s.history},
		{"POST /threads/{thread}/runs", s.createRun},
		{"POST /threads/{thread}/runs/stream", s.streamRun},
		{"POST /threads/{thread}/runs/wait", s.waitRun},
		{"GET /threads/{thread}/runs", s.listRuns},
		{"GET /threads/{thread}/runs/{run}", s.getRun},
		{"GET /threads/{thread}/runs/{run}/join", s.joinRun},
		{"GET /threads/{thread}/runs/{run}/stream", s.joinStream},
		{"POST /threads/{thread}/runs/{run}/cancel", s.cancelRun},
	} {
		s.mux.HandleFunc(rt.pattern, rt.h)
		s.table = append(s.table, parseRoute(rt.pattern))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, ErrorBody{Detail: msg})
}

// httpError is an error with the status it is answered with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func errf(status int, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

// fail answers err: its own status for an *httpError, 404 for ErrNotFound,
// else 500 (logged, with a generic message).
func (s *Server) fail(w http.ResponseWriter, err error) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		writeError(w, he.status, he.msg)
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		s.log.Error("request failed", "err", err)
		writeError(w, http.StatusInternalServerError, "internal error: "+err.Error())
	}
}

// decode reads a JSON body into v; an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return errf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	if len(b) > maxBody {
		return errf(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxBody)
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errf(http.StatusUnprocessableEntity, "the request body is not valid JSON for this endpoint: %v", err)
	}
	return nil
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return reflect.DeepEqual(a, b)
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	flags := map[string]any{"assistants": true, "crons": false, "langsmith": false}
	s.modeFlags(flags)
	writeJSON(w, 200, Info{Version: "deepagents-go", Flags: flags})
}

func (s *Server) assistantList() []Assistant {
	var out []Assistant
	for _, a := range s.cfg.Agents {
		out = append(out, s.agents[a.Name].view)
	}
	return out
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) {
	var q AssistantSearch
	if err := decode(r, &q); err != nil {
		s.fail(w, err)
		return
	}
	if err := checkPage(q.Limit, q.Offset); err != nil {
		s.fail(w, err)
		return
	}
	var out []Assistant
	for _, a := range s.assistantList() {
		if q.GraphID != "" && a.GraphID != q.GraphID || q.Name != "" && a.Name != q.Name {
			continue
		}
		ok := true
		for k, v := range q.Metadata {
			if !jsonEqual(a.Metadata[k], v) {
				ok = false
			}
		}
		if ok {
			out = append(out, a)
		}
	}
	limit := 10
	if q.Limit != nil {
		limit = *q.Limit
	}
	w.Header().Set("X-Pagination-Total", fmt.Sprint(len(out)))
	writeJSON(w, 200, page(out, limit, q.Offset))
}

// assistant finds an assistant by id or graph id.
func (s *Server) assistant(id string) (*assistant, error) {
	if a, ok := s.agents[id]; ok {
		return a, nil
	}
	return nil, errf(http.StatusNotFound, "assistant %q not found", id)
}

func (s *Server) getAssistant(w http.ResponseWriter, r *http.Request) {
	a, err := s.assistant(r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, a.view)
}
