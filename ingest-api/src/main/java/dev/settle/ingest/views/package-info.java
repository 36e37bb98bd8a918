/** What clients read of a session: its state, its conversation, its turns and its event stream (SSE). */
package dev.settle.ingest.views;
