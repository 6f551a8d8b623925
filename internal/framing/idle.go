package framing

// SetIdle (relay to agent) changes the agent's idle stop for the rest of the
// session, without restarting it: JSON IdleSetting. No reply; an agent that
// predates it answers an Error with id 0, which the relay ignores.
const SetIdle Type = 'L'

// IdleSetting is SetIdle's payload.
type IdleSetting struct {
	// IdleStopS stops the encoder after this many seconds without a
	// picture; 0 keeps it running.
	IdleStopS int `json:"idle_stop_s"`
}
