package server

import "net/http"

func (s *Server) notYet(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "not implemented yet")
}
func (s *Server) createRun(w http.ResponseWriter, r *http.Request)  { s.notYet(w, r) }
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request)  { s.notYet(w, r) }
func (s *Server) waitRun(w http.ResponseWriter, r *http.Request)    { s.notYet(w, r) }
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request)   { s.notYet(w, r) }
func (s *Server) getRun(w http.ResponseWriter, r *http.Request)     { s.notYet(w, r) }
func (s *Server) joinRun(w http.ResponseWriter, r *http.Request)    { s.notYet(w, r) }
func (s *Server) joinStream(w http.ResponseWriter, r *http.Request) { s.notYet(w, r) }
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request)  { s.notYet(w, r) }
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request)    { s.notYet(w, r) }
func (s *Server) lockThread(id string) func()                       { return func() {} }
func (s *Server) cancelThreadRuns(id, reason string)                {}
