package io.questionprotocol.android

import io.questionprotocol.core.FeedCell
import io.questionprotocol.core.FeedListener
import io.questionprotocol.core.PhoneCore
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.channelFlow
import kotlinx.coroutines.flow.conflate
import kotlinx.coroutines.flow.flowOn

/**
 * The feed as a [Flow]: the feed now, then again each time it may have
 * changed (the core's feed subscription fires after any commit to the shared
 * store, by the app or the messaging service's process). Glue only: the core
 * decides when and what. Every read, the first too, on `Dispatchers.IO`
 * (never the collector's thread nor the core's watcher thread); subscribed
 * before the first read, so no change falls between; a slow collector gets the
 * newest feed, not a backlog; the core's subscription stops when collection
 * does. A store that cannot be read at the start ends the flow with its
 * error; a later failed read (a store suspended in the background) is
 * skipped: the core signals again on resume.
 *
 *     lifecycleScope.launch { phone.feedUpdates().collect { cells -> adapter.submit(cells) } }
 */
fun PhoneCore.feedUpdates(): Flow<List<FeedCell>> = channelFlow {
    val changed = Channel<Unit>(Channel.CONFLATED)
    val subscription = subscribeFeed(object : FeedListener {
        override fun feedChanged() {
            changed.trySend(Unit)
        }
    })
    try {
        send(feed())
        for (signal in changed) runCatching { feed() }.onSuccess { send(it) }
    } finally {
        subscription.cancel()
    }
}.conflate().flowOn(Dispatchers.IO)
