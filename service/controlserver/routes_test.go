package controlserver

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/strata-companion/companion/internal/controlapi"
	"github.com/strata-companion/companion/internal/events"
	"github.com/strata-companion/companion/internal/settings"
)

// tally is an owner that notes which of its methods was called and what
// it was given; every call answers a value that names the method, so the
// client can tell it got the answer of the method it called.
type tally struct {
	mu    sync.Mutex
	calls []string
	args  []any
}

var _ controlapi.Owner = (*tally)(nil)

func (t *tally) note(m string, arg any) {
	t.mu.Lock()
	t.calls = append(t.calls, m)
	t.args = append(t.args, arg)
	t.mu.Unlock()
}

func (t *tally) State(ctx context.Context) (*controlapi.State, error) {
	t.note("State", nil)
	return &controlapi.State{Seq: 11}, nil
}
func (t *tally) SetVision(ctx context.Context, req controlapi.VisionRequest) (*controlapi.VisionResponse, error) {
	t.note("SetVision", req)
	return &controlapi.VisionResponse{Message: "SetVision"}, nil
}
func (t *tally) PatchSettings(ctx context.Context, p controlapi.SettingsPatch) (*controlapi.State, error) {
	t.note("PatchSettings", p)
	return &controlapi.State{Seq: 12}, nil
}
func (t *tally) Remote(ctx context.Context) (*settings.Remote, error) {
	t.note("Remote", nil)
	return &settings.Remote{Host: "Remote"}, nil
}
func (t *tally) RecordRemote(ctx context.Context, rec controlapi.RemoteRecord) (*settings.Remote, error) {
	t.note("RecordRemote", rec)
	return &settings.Remote{Host: "RecordRemote"}, nil
}
func (t *tally) Configs(ctx context.Context) (*controlapi.ConfigList, error) {
	t.note("Configs", nil)
	return &controlapi.ConfigList{Running: "Configs"}, nil
}
func (t *tally) SwitchConfig(ctx context.Context, req controlapi.ConfigRequest) (*controlapi.ConfigResponse, error) {
	t.note("SwitchConfig", req)
	return &controlapi.ConfigResponse{Message: "SwitchConfig"}, nil
}
func (t *tally) RepairConfig(ctx context.Context, req controlapi.RepairRequest) (*controlapi.RepairResponse, error) {
	t.note("RepairConfig", req)
	return &controlapi.RepairResponse{Message: "RepairConfig"}, nil
}
func (t *tally) UpdateStrata(ctx context.Context, req controlapi.UpdateRequest) (*controlapi.UpdateResponse, error) {
	t.note("UpdateStrata", req)
	return &controlapi.UpdateResponse{Message: "UpdateStrata"}, nil
}
func (t *tally) Logs(ctx context.Context, tail int) (*controlapi.LogsResponse, error) {
	t.note("Logs", tail)
	return &controlapi.LogsResponse{File: "Logs"}, nil
}
func (t *tally) Start(ctx context.Context) error   { t.note("Start", nil); return nil }
func (t *tally) Stop(ctx context.Context) error    { t.note("Stop", nil); return nil }
func (t *tally) Restart(ctx context.Context) error { t.note("Restart", nil); return nil }
func (t *tally) Unload(ctx context.Context) error  { t.note("Unload", nil); return nil }

// Every method of controlapi.Owner, called on the control API's client,
// crosses the real server (its guards, its route table) and reaches the
// owner's method of the same name with what the client was given, and the
// owner's answer comes back. The methods are read from the interface
// itself, so a method added to the owner without its route, or a client
// method posting to another method's route, fails here. Each call's
// arguments are made by reflection: a non-zero value of the argument's
// type, so a request that does not travel (a dropped body, a lost query)
// is seen.
func TestEveryOwnerMethodCrossesTheAPI(t *testing.T) {
	owner := &tally{}
	_, c := serve(t, Backend{Bus: events.NewBus(10), Owner: owner})
	it := reflect.TypeOf((*controlapi.Owner)(nil)).Elem()
	if it.NumMethod() < 13 {
		t.Fatalf("the owner has %d methods; the test reads fewer than the interface has", it.NumMethod())
	}
	cv := reflect.ValueOf(c)
	var names []string
	for i := 0; i < it.NumMethod(); i++ {
		m := it.Method(i)
		names = append(names, m.Name)
		args := []reflect.Value{reflect.ValueOf(context.Background())}
		var sent any
		for j := 1; j < m.Type.NumIn(); j++ {
			v := filled(m.Type.In(j))
			sent = v.Interface()
			args = append(args, v)
		}
		owner.mu.Lock()
		before := len(owner.calls)
		owner.mu.Unlock()
		out := cv.MethodByName(m.Name).Call(args)
		if err, _ := out[len(out)-1].Interface().(error); err != nil {
			t.Errorf("%s through the API: %v", m.Name, err)
			continue
		}
		owner.mu.Lock()
		calls, got := owner.calls[before:], owner.args[before:]
		owner.mu.Unlock()
		if len(calls) != 1 || calls[0] != m.Name {
			t.Errorf("the client's %s reached the owner's %v", m.Name, calls)
			continue
		}
		if sent != nil && !reflect.DeepEqual(got[0], sent) {
			t.Errorf("%s: the owner was given %+v, the client %+v", m.Name, got[0], sent)
		}
		if len(out) == 2 && !strings.Contains(fmtAnswer(out[0]), m.Name) && m.Name != "State" && m.Name != "PatchSettings" {
			t.Errorf("%s answered %s, not its own answer", m.Name, fmtAnswer(out[0]))
		}
	}
	sort.Strings(names)
	t.Logf("%d owner methods crossed the API: %s", len(names), strings.Join(names, " "))
}

// fmtAnswer is the words by which an answer names the method that made it.
func fmtAnswer(v reflect.Value) string {
	b := new(strings.Builder)
	switch x := v.Interface().(type) {
	case *controlapi.VisionResponse:
		b.WriteString(x.Message)
	case *settings.Remote:
		b.WriteString(x.Host)
	case *controlapi.ConfigList:
		b.WriteString(x.Running)
	case *controlapi.ConfigResponse:
		b.WriteString(x.Message)
	case *controlapi.RepairResponse:
		b.WriteString(x.Message)
	case *controlapi.UpdateResponse:
		b.WriteString(x.Message)
	case *controlapi.LogsResponse:
		b.WriteString(x.File)
	}
	return b.String()
}

// filled is a value of type ty with every settable field non-zero where a
// JSON round trip keeps it (strings, numbers, bools, pointers to them).
func filled(ty reflect.Type) reflect.Value {
	v := reflect.New(ty).Elem()
	fill(v, 0)
	return v
}

func fill(v reflect.Value, depth int) {
	if depth > 3 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(3)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && v.Type().Field(i).Tag.Get("json") != "-" {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
