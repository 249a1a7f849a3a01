// The event log as server-sent events (GET /api/v1/events/stream): what `baton events -f`
// shows, for the dashboard's live views. From the resumption point (Last-Event-ID: a
// log_seq) or the newest `tail` records, then each record as it becomes durable; each
// event's id is its log_seq, so a browser that reconnects misses nothing and gets nothing
// twice. The stream holds a place of the follow quota (its ticket) while it is open.
// It reads the store up to now, then takes the frames the server's EventHub hands it (one
// encoding per event for all streams); one that fell behind and lost its frames reads the
// store again from its cursor. A busy log is sent in bursts, at most one write every
// 200 ms per stream. A comment line every kSseHeartbeat keeps an idle stream open.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>

#include "coordinator/event_log.h"
#include "coordinator/stream_quota.h"
#include "coordinator/web/event_hub.h"

namespace baton::web {

// Streams `query` (its after_seq the resumption point) into `res` until the client goes,
// or `stopping` is set (the server's end: each wait is at most a second).
void ServeEventFeed(const EventLog* log, EventHub* hub, LogQuery query, StreamQuota::Ticket ticket,
                    const std::atomic<bool>* stopping, httplib::Response& res);

}  // namespace baton::web
