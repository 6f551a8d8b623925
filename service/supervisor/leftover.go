package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/fserr"
)

// pidRecord is Config.PIDFile: the running server, so that the next run
// can find a server an earlier run left behind (a supervisor killed before
// it could stop it, on a system without the guard) and name it instead of
// failing on a bare "port in use".
type pidRecord struct {
	PID   int    `json:"pid"`
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"` // the process's start time (Linux: clock ticks after boot)
	Port  int    `json:"port"`
	Cmd   string `json:"cmd"`
	// Mark is the value of EnvServerMark the server was started with; its
	// engine and encoder inherit it. Only processes that carry it are taken
	// for ours, so a reused pid or group number is never ended.
	Mark string `json:"mark"`
}

// EnvServerMark is set in the server's environment (and so in its engine's
// and encoder's) to a value unique to one start.
const EnvServerMark = "STRATA_COMPANION_SERVER_MARK"

func newMark() string { return fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()) }

func (s *Supervisor) writePID(p *process) {
	if s.cfg.PIDFile == "" {
		return
	}
	start, _ := procStart(p.pid)
	rec := pidRecord{PID: p.pid, PGID: p.pid, Start: start, Port: p.port, Cmd: strings.Join(p.cmd.Args, " "), Mark: p.mark}
	b, _ := json.Marshal(rec)
	os.MkdirAll(filepath.Dir(s.cfg.PIDFile), 0o755)
	if err := os.WriteFile(s.cfg.PIDFile, append(b, '\n'), 0o644); err != nil {
		s.cfg.Logf("recording the server's pid: %v", fserr.Explain(err, s.cfg.PIDFile))
	}
}

func (s *Supervisor) removePID(p *process) {
	if s.cfg.PIDFile == "" {
		return
	}
	if rec, err := readPID(s.cfg.PIDFile); err == nil && rec.PID == p.pid {
		os.Remove(s.cfg.PIDFile)
	}
}

func readPID(path string) (*pidRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec pidRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.PGID <= 1 {
		return nil, fmt.Errorf("%s is not a pid record", path)
	}
	return &rec, nil
}

// endLeftover finds a server an earlier run left behind (the pid file's
// process group still has processes started no earlier than the server and
// carrying its mark),
// names it in an event, and ends it: SIGTERM to its group, SIGKILL after
// StopTimeout. It is ours (our pid file, our group), and it holds the port
// and the GPU the new server needs. An error says what could not be ended.
func (s *Supervisor) endLeftover() error {
	if s.cfg.PIDFile == "" {
		return nil
	}
	rec, err := readPID(s.cfg.PIDFile)
	if err != nil {
		os.Remove(s.cfg.PIDFile)
		return nil
	}
	left := groupSince(rec.PGID, rec.Start, rec.Mark)
	if len(left) == 0 {
		os.Remove(s.cfg.PIDFile)
		return nil
	}
	what := fmt.Sprintf("a Strata server left behind by an earlier run of the service (pid %d, port %d: %s; %d process(es) in its group: %v)", rec.PID, rec.Port, rec.Cmd, len(left), left)
	s.pub("found "+what+"; ending it", events.ServerProgressDetails{LeftoverPID: rec.PID, LeftoverPIDs: left, Port: rec.Port})
	s.line(nil, "supervisor", "found "+what+"; ending it")
	endGroup(rec.PGID, true)
	deadline := time.Now().Add(s.cfg.StopTimeout)
	for len(groupSince(rec.PGID, rec.Start, rec.Mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	endGroup(rec.PGID, false)
	deadline = time.Now().Add(5 * time.Second)
	for len(groupSince(rec.PGID, rec.Start, rec.Mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if still := groupSince(rec.PGID, rec.Start, rec.Mark); len(still) > 0 {
		return fmt.Errorf("%s is still running and could not be ended: end it yourself (kill -9 -%d as its owner or root), then start the server again", what, rec.PGID)
	}
	os.Remove(s.cfg.PIDFile)
	return nil
}
