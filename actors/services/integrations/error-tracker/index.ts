export { errorIssuesForSession, type ErrorIssuesAnswer } from './lookup.js';
export { sentryIssuesForSession, ErrorTrackerUnavailable, ERROR_ISSUES_CAP, type ErrorTrackerIssue } from './sentry.js';
