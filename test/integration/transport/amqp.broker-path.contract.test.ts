/**
 * Invariant: the broker path keeps the transport contract on its own. With the in-process shortcut on (the
 * default), a node asking shards it holds mostly skips RabbitMQ; here it is off, so every ask and reply crosses
 * the broker and the contract suite holds for that path too.
 */
import type { DeliveryHandler } from '../../../transport/port.js';
import { skipEngine } from '../../support/engines.js';
import { startAmqpTransport } from '../../support/transport.js';
import { transportContract } from '../../contract/transport.contract.test.js';

if (!skipEngine.amqp) transportContract('amqp', (handler: DeliveryHandler) => startAmqpTransport(handler, { shortcut: false }));
