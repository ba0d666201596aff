// SPDX-License-Identifier: Apache-2.0
// net on loopback only: a TCP echo server with concurrent clients, a unix socket server,
// UDP to itself, HTTP with keep-alive, a refused connection, a server on ::1 and the
// resolution of `localhost`.
'use strict';
const net = require('net');
const dgram = require('dgram');
const http = require('http');
const os = require('os');
const path = require('path');
const fs = require('fs');
const dns = require('dns');
const { sha, pattern } = require('./util.js');

function echoServer(listenArgs) {
  return new Promise((resolve, reject) => {
    const srv = net.createServer((s) => s.pipe(s));
    srv.on('error', reject);
    srv.listen(...listenArgs, () => resolve(srv));
  });
}

function roundTrip(connectOpts, data) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let got = 0;
    const c = net.connect(connectOpts, () => c.write(data));
    c.on('data', (d) => {
      chunks.push(d);
      got += d.length;
      if (got >= data.length) c.end();
    });
    c.on('error', reject);
    c.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

exports['tcp-echo'] = async () => {
  const srv = await echoServer([0, '127.0.0.1']);
  const { port } = srv.address();
  const datas = [1, 2, 3, 4, 5, 6, 7, 8].map((k) => pattern(256 << 10, k));
  const back = await Promise.all(datas.map((d) => roundTrip({ host: '127.0.0.1', port }, d)));
  srv.close();
  const ok = back.filter((b, i) => b.equals(datas[i])).length;
  return `${ok}/8 ${sha(Buffer.concat(back))}`;
};

exports['unix-socket'] = async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'compat-sock-'));
  const p = path.join(dir, 's');
  const srv = await echoServer([p]);
  const data = pattern(100000, 42);
  const back = await roundTrip({ path: p }, data);
  srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return `${back.equals(data)} ${back.length}`;
};

exports['udp'] = () => new Promise((resolve, reject) => {
  const s = dgram.createSocket('udp4');
  const got = new Set();
  s.on('error', reject);
  s.on('message', (m) => {
    got.add(m.toString());
    if (got.size === 10) {
      s.close();
      resolve(`${got.size} ${[...got].sort().join(',')}`);
    }
  });
  s.bind(0, '127.0.0.1', () => {
    const { port } = s.address();
    for (let i = 0; i < 10; i++) s.send(`m${i}`, port, '127.0.0.1');
  });
});

exports['http-keepalive'] = async () => {
  const srv = http.createServer((req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`${req.method} ${req.url}`);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set();
  const bodies = [];
  for (let i = 0; i < 10; i++) {
    bodies.push(await new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: `/p${i}`, agent }, (res) => {
        sockets.add(res.socket.localPort);
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve(`${res.statusCode}:${b}`));
      });
      req.on('error', reject);
    }));
  }
  agent.destroy();
  srv.close();
  return `${bodies.length} ${bodies[9]} connections ${sockets.size}`;
};

exports['refused'] = async () => {
  const srv = await echoServer([0, '127.0.0.1']);
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  try {
    await roundTrip({ host: '127.0.0.1', port }, Buffer.from('x'));
    return 'connected';
  } catch (e) {
    return e.code;
  }
};

exports['ipv6-loopback'] = async () => {
  let srv;
  try {
    srv = await echoServer([0, '::1']);
  } catch (e) {
    return `listen ${e.code}`;
  }
  const { port } = srv.address();
  const back = await roundTrip({ host: '::1', port }, Buffer.from('six'));
  srv.close();
  return back.toString();
};

exports['lookup-localhost'] = () => new Promise((resolve) => {
  dns.lookup('localhost', { all: true }, (e, addrs) =>
    resolve(e ? e.code : addrs.map((a) => a.address).sort().join(' ')));
});
