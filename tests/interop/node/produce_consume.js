'use strict';
// Driven by tests/interop/test_ali_ons.py: produce COUNT messages with ali-ons to TOPIC through the
// nameserver NAMESRV, consume them back with an ali-ons push consumer, print one JSON line and exit.
const { Producer, Consumer, Message } = require('ali-ons');

const nameSrv = process.env.NAMESRV;
const topic = process.env.TOPIC;
const count = Number(process.env.COUNT || '10');
const group = process.env.GROUP || 'GID_ORBITMQ_INTEROP';
const timeoutMs = Number(process.env.TIMEOUT_MS || '40000');
const httpclient = {}; // required by an assert, never used with nameSrv set

function finish(result, code) {
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(code);
}

(async () => {
  const result = { sent: [], received: [], errors: [] };
  const timer = setTimeout(() => {
    result.errors.push('timeout');
    finish(result, 2);
  }, timeoutMs);

  const producer = new Producer({ nameSrv, httpclient, producerGroup: group + '_P' });
  producer.on('error', err => result.errors.push('producer: ' + err.message));
  await producer.ready();
  for (let i = 0; i < count; i++) {
    const msg = new Message(topic, 'TagA', 'ali-ons message ' + i);
    msg.keys = [ 'key-' + i ];
    const sendResult = await producer.send(msg);
    result.sent.push({ status: sendResult.sendStatus, msgId: sendResult.msgId, queueId: sendResult.messageQueue.queueId });
  }

  const consumer = new Consumer({ nameSrv, httpclient, consumerGroup: group + '_C', consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET' });
  consumer.on('error', err => result.errors.push('consumer: ' + err.message));
  const seen = new Set();
  consumer.subscribe(topic, 'TagA', async msg => {
    const body = msg.body.toString();
    if (!seen.has(body)) {
      seen.add(body);
      result.received.push({ body, tags: msg.tags, keys: msg.keys, msgId: msg.msgId });
    }
    if (seen.size >= count) {
      clearTimeout(timer);
      setTimeout(async () => {
        try {
          await consumer.close();
          await producer.close();
        } catch (err) {
          result.errors.push('close: ' + err.message);
        }
        finish(result, 0);
      }, 100);
    }
  });
  await consumer.ready();
})().catch(err => {
  process.stdout.write(JSON.stringify({ sent: [], received: [], errors: [ 'fatal: ' + (err && err.stack || err) ] }) + '\n');
  process.exit(1);
});
