package controlapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// StatusError is the owner's refusal, one value on both sides of the API:
// the daemon and the in-process owner make it (BadRequest, Conflict, Busy,
// Unavailable, or StatusOf of a backend's error), the server answers it
// with its Code and words (controlapi.Error), and the client reads it back
// into the same type. Callers read Code and Busy; people read Message.
type StatusError struct {
	Code    int
	Message string
	// Busy: a 409 because Strata is answering a request (ask again with confirm).
	Busy bool
	// FromService: it came back over the API (the service said it), not
	// from an owner in this process.
	FromService bool
	err         error
}

func (e *StatusError) Error() string {
	if e.FromService {
		return fmt.Sprintf("the service answered %d: %s", e.Code, e.Message)
	}
	return e.Message
}

// Unwrap is the error the owner refused with (nil when it came over the API).
func (e *StatusError) Unwrap() error { return e.err }

func refusal(code int, busy bool, err error) *StatusError {
	return &StatusError{Code: code, Message: err.Error(), Busy: busy, err: err}
}

// BadRequest is a request the owner cannot carry out as asked: fix it (400).
func BadRequest(err error) error { return refusal(http.StatusBadRequest, false, err) }

// Conflict is a change refused because of something else (another
// writer, another config running, an operation under way): nothing was
// changed; trying again later is safe (409).
func Conflict(err error) error { return refusal(http.StatusConflict, false, err) }

// Busy is a change refused because Strata is answering a request: asking
// again with confirm goes ahead (409, busy).
func Busy(err error) error { return refusal(http.StatusConflict, true, err) }

// Unavailable is what this owner cannot do at all (501): an in-process
// owner has no server to start or log to read.
func Unavailable(err error) error { return refusal(http.StatusNotImplemented, false, err) }

// StatusCoder is an error that knows its API status (internal/backend's
// refusals): StatusOf maps it without the backend knowing about HTTP
// handlers or the API knowing about the backend.
type StatusCoder interface {
	error
	StatusCode() int
}

// StatusOf is err as the owner's refusal: a *StatusError as it is, a
// StatusCoder with its code, anything else a 500 with its words. It is the
// one mapping of the owner's errors; nil stays nil.
func StatusOf(err error) *StatusError {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se
	}
	var sc StatusCoder
	if errors.As(err, &sc) {
		return refusal(sc.StatusCode(), false, err)
	}
	return refusal(http.StatusInternalServerError, false, err)
}

// Words is the owner's refusal as a person should read it, the one
// wording for the CLI, the wizard and the tray: the owner's own sentence
// whether the service or this process said it (the error the in-process
// owner refused with, as it is); a route the running service does not know
// is a service older than this program. Anything else stays as it is.
func Words(err error) error {
	var se *StatusError
	switch {
	case !errors.As(err, &se):
		return err
	case se.err != nil:
		return se.err
	case se.FromService && se.Code == http.StatusNotFound && !strings.HasPrefix(se.Message, "unknown action"):
		return errors.New("the running service is older than this program and cannot do this: restart it after updating (strata-service stop, then strata-service start), then try again")
	case se.Message != "":
		return errors.New(se.Message)
	}
	return err
}
