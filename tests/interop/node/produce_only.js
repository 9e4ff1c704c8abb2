'use strict';
// Driven by tests/interop/test_ali_ons_cross.py: ali-ons produces messages for orbitmq's Python consumer.
// Sends COUNT small messages (tag TagA, keys "key-i k2-i", user property color) and one compressed body
// (>= 4096 bytes, tag Big) to TOPIC, prints one JSON line with what the producer saw, then exits.
const { Producer, Message } = require('ali-ons');

const nameSrv = process.env.NAMESRV;
const topic = process.env.TOPIC;
const count = Number(process.env.COUNT || '10');
const group = process.env.GROUP || 'GID_ORBITMQ_ALI_PRODUCER';
const httpclient = {}; // required by an assert, never used with nameSrv set

(async () => {
  const result = { sent: [], errors: [] };
  const producer = new Producer({ nameSrv, httpclient, producerGroup: group });
  producer.on('error', err => result.errors.push('producer: ' + err.message));
  await producer.ready();
  const bodies = [];
  for (let i = 0; i < count; i++) {
    bodies.push({ tags: 'TagA', body: 'ali-ons to python ' + i, keys: [ 'key-' + i, 'k2-' + i ], color: 'c' + i });
  }
  bodies.push({ tags: 'Big', body: 'x'.repeat(5000) + '-big', keys: [ 'big' ], color: 'big' });
  for (const spec of bodies) {
    const msg = new Message(topic, spec.tags, spec.body);
    msg.keys = spec.keys;
    msg.properties.color = spec.color;
    const sent = await producer.send(msg);
    result.sent.push({
      body: spec.body, status: sent.sendStatus, msgId: sent.msgId,
      queueId: Number(sent.messageQueue.queueId), queueOffset: Number(sent.queueOffset),
    });
  }
  await producer.close();
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
})().catch(err => {
  process.stdout.write(JSON.stringify({ sent: [], errors: [ 'fatal: ' + (err && err.stack || err) ] }) + '\n');
  process.exit(1);
});
