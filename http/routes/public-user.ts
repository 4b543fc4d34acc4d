import type { UserRecord } from '../../storage/identity/rows.js';

/** What any identity reply says of a user: who they are, never their password hash or memberships. */
export const publicUser = (u: UserRecord) => ({ id: u.id, email: u.email, firstName: u.firstName, lastName: u.lastName, profilePictureUrl: u.profilePictureUrl });
