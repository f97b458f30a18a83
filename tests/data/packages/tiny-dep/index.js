"use strict";
module.exports = { version: require("./package.json").version };
