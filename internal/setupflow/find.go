package setupflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// FindStep is the Strata page: the installs found, the one chosen and its
// config. The second PC and the trials read the choice through Selected.
type FindStep struct {
	finder Finder
	gate   gate
	// changed tells the flow the choice changed (the Review is stale).
	changed func()

	mu         sync.Mutex
	installs   []Install
	install    *Install // one of installs; nil: none chosen
	configPath string
}

func newFindStep(g gate, finder Finder, changed func()) *FindStep {
	return &FindStep{finder: finder, gate: g, changed: changed}
}

// resume starts from the install and config a machine was set up with.
func (s *FindStep) resume(in Install, configPath string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installs = []Install{in}
	s.install = &s.installs[0]
	s.configPath = configPath
}

// Search looks for Strata installs in the usual places and selects the
// first one that can run.
func (s *FindStep) Search(ctx context.Context) ([]Install, error) {
	ctx, end, err := s.gate.begin(ctx, "find Strata", PageFindStrata)
	if err != nil {
		return nil, err
	}
	defer end()
	found, err := s.finder.Find(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.installs = found
	s.install = nil
	for i := range s.installs {
		if s.installs[i].Usable() {
			s.selectLocked(i)
			break
		}
	}
	selected := s.install != nil
	s.mu.Unlock()
	if selected {
		s.changed()
	}
	return append([]Install(nil), found...), nil
}

// Browse inspects a folder the user picked and selects it.
func (s *FindStep) Browse(ctx context.Context, root string) (Install, error) {
	if strings.TrimSpace(root) == "" {
		return Install{}, errors.New("type the Strata folder (the one holding serve/ and engine/) first")
	}
	ctx, end, err := s.gate.begin(ctx, "inspect "+root, PageFindStrata)
	if err != nil {
		return Install{}, err
	}
	defer end()
	in, err := s.finder.Inspect(ctx, root)
	if err != nil {
		return Install{}, err
	}
	defer s.changed()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.installs {
		if s.installs[i].Root == in.Root {
			s.installs[i] = in
			s.selectLocked(i)
			return in, nil
		}
	}
	s.installs = append(s.installs, in)
	s.selectLocked(len(s.installs) - 1)
	return in, nil
}

// Installs are the installs found so far.
func (s *FindStep) Installs() []Install {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Install(nil), s.installs...)
}

// SelectInstall picks installs[i] and its config in use.
func (s *FindStep) SelectInstall(i int) error {
	s.mu.Lock()
	if i < 0 || i >= len(s.installs) {
		s.mu.Unlock()
		return fmt.Errorf("there is no install number %d", i+1)
	}
	s.selectLocked(i)
	s.mu.Unlock()
	s.changed()
	return nil
}

func (s *FindStep) selectLocked(i int) {
	s.install = &s.installs[i]
	s.configPath = s.install.InUse
	if s.configPath == "" && len(s.install.Configs) == 1 {
		s.configPath = s.install.Configs[0]
	}
}

// SelectConfig picks one of the selected install's configs.
func (s *FindStep) SelectConfig(path string) error {
	s.mu.Lock()
	if s.install == nil {
		s.mu.Unlock()
		return errors.New("choose a Strata install first")
	}
	for _, c := range s.install.Configs {
		if c == path {
			s.configPath = path
			s.mu.Unlock()
			s.changed()
			return nil
		}
	}
	root := s.install.Root
	s.mu.Unlock()
	return fmt.Errorf("%s is not one of the configs of %s", path, root)
}

// Selected is the chosen install and config ("" when none).
func (s *FindStep) Selected() (Install, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.install == nil {
		return Install{}, "", false
	}
	return *s.install, s.configPath, true
}

// complete says what the Strata page still lacks (nil: nothing).
func (s *FindStep) complete() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.install == nil:
		return errors.New("choose a Strata install (or Browse to its folder) first")
	case !s.install.Usable():
		return fmt.Errorf("this Strata install cannot run yet: %s", strings.Join(s.install.Problems, "; "))
	case s.configPath == "":
		return errors.New("choose which of the install's configs (strata-<tag>.json) Strata uses")
	}
	return nil
}
