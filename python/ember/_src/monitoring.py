"""`jax.monitoring`: named events and the listeners called when they are
recorded. Ember records none of its own; programs and libraries may."""

__all__ = [
    "clear_event_listeners", "get_event_duration_listeners", "get_event_listeners",
    "get_event_time_span_listeners", "get_scalar_listeners", "record_event",
    "record_event_duration_secs", "record_event_time_span", "record_scalar",
    "register_event_duration_secs_listener", "register_event_listener",
    "register_event_time_span_listener", "register_scalar_listener",
    "unregister_event_duration_listener", "unregister_event_listener",
    "unregister_event_time_span_listener", "unregister_scalar_listener",
]

_event = []
_duration = []
_time_span = []
_scalar = []


def record_event(event, **kwargs):
    for callback in list(_event):
        callback(event, **kwargs)


def record_event_duration_secs(event, duration, **kwargs):
    for callback in list(_duration):
        callback(event, duration, **kwargs)


def record_event_time_span(event, start_time, end_time, **kwargs):
    for callback in list(_time_span):
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event, value, **kwargs):
    for callback in list(_scalar):
        callback(event, value, **kwargs)


def register_event_listener(callback):
    _event.append(callback)


def register_event_duration_secs_listener(callback):
    _duration.append(callback)


def register_event_time_span_listener(callback):
    _time_span.append(callback)


def register_scalar_listener(callback):
    _scalar.append(callback)


def get_event_listeners():
    return list(_event)


def get_event_duration_listeners():
    return list(_duration)


def get_event_time_span_listeners():
    return list(_time_span)


def get_scalar_listeners():
    return list(_scalar)


def clear_event_listeners():
    for listeners in (_event, _duration, _time_span, _scalar):
        listeners.clear()


def _unregister(listeners, callback):
    assert callback in listeners
    listeners.remove(callback)


def unregister_event_listener(callback):
    _unregister(_event, callback)


def unregister_event_duration_listener(callback):
    _unregister(_duration, callback)


def unregister_event_time_span_listener(callback):
    _unregister(_time_span, callback)


def unregister_scalar_listener(callback):
    _unregister(_scalar, callback)
