'use strict';
// A real Jest project of two test files that both load volt-sem (Jest gives
// each file a fresh module registry while the addon stays loaded). Run by
// `make test`, in band and with workers.
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/*.test.js'],
};
