// Preloaded (`node --require`) to make this process look like another platform:
// FAKE_PLATFORM and FAKE_ARCH as process.platform and process.arch, FAKE_LIBC
// (glibc or musl) as what the process report says of the C library.
'use strict';

const { FAKE_PLATFORM, FAKE_ARCH, FAKE_LIBC } = process.env;
if (FAKE_PLATFORM) Object.defineProperty(process, 'platform', { value: FAKE_PLATFORM });
if (FAKE_ARCH) Object.defineProperty(process, 'arch', { value: FAKE_ARCH });
if (FAKE_LIBC) {
  const header = FAKE_LIBC === 'glibc' ? { glibcVersionRuntime: '2.36' } : {};
  process.report.getReport = () => ({ header });
}
