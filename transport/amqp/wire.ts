/**
 * What travels between nodes besides envelopes: message types and headers of the AMQP transport's own messages.
 * Batches have theirs in ask-batch.ts.
 */

/** RabbitMQ's pseudo-queue for direct reply-to: replies skip queues entirely and go to the asking channel. */
export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';
/** AMQP `type` of an ownership probe: an empty message that only proves who holds a shard (decision 0010). */
export const PROBE_TYPE = 'probe';
/** AMQP `type` of a seal marker: a probe that also tells its sender when it may skip the broker (shortcut.ts). */
export const SEAL_TYPE = 'seal';
/** Reply header naming the answering node's inbox: askers route later asks of that shard there (owner-routes.ts). */
export const INBOX_HEADER = 'x-troupe-inbox';
