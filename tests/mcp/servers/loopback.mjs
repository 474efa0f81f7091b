// Preloaded (`node --import ./loopback.mjs ...`) into a third-party HTTP server the tests start:
// a listen() that names no host binds 127.0.0.1 instead of every interface.
import http from "node:http";

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
